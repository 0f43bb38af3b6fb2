package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/internal/conversion"
)

const crdDir = "config/crd/bases"

// conversionStanza points a CRD's conversion at the manager's /convert
// through the install's Service. The manager keeps it pointing at itself
// (another namespace, a URL outside the cluster) and fills in the
// caBundle; the stanza is in the manifest so that no v1alpha1 request is
// ever served with strategy None (the API server would only relabel the
// object, and a write would prune the fields v1beta1 keeps elsewhere).
var conversionStanza = fmt.Sprintf(`  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          name: %s
          namespace: %s
          path: %s
      conversionReviewVersions:
      - v1
`, ServiceName, Namespace, conversion.Path)

// addConversions gives the CRDs of the kinds served in two versions their
// conversion stanza. controller-gen has no marker for it.
func addConversions(kinds []schema.GroupKind) error {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	done := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		if !slices.Contains(kinds, gk) {
			continue
		}
		if crd.Spec.Conversion != nil {
			return fmt.Errorf("%s: already has a conversion", file)
		}
		text := string(data)
		at := strings.Index(text, "\nspec:\n")
		if at < 0 {
			return fmt.Errorf("%s: no top-level spec", file)
		}
		at += len("\nspec:\n")
		text = text[:at] + conversionStanza + text[at:]
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			return err
		}
		done++
	}
	if done != len(kinds) {
		return fmt.Errorf("%d kinds convert, but %d of their CRDs are in %s", len(kinds), done, crdDir)
	}
	return nil
}
