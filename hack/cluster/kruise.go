package cluster

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// KruiseModule is the OpenKruise module the kruise-manager binary is built
// from (hack/tools/kruise pins its version).
const KruiseModule = "github.com/openkruise/kruise"

// OpenKruise is OpenKruise's manager running next to the cluster, out of
// it, as its own code allows when WEBHOOK_HOST is set: it serves its
// webhooks and conversions by URL on loopback with a certificate of its
// own, and points its webhook configurations and CRDs at them.
type OpenKruise struct {
	// Name is the process name, for Cluster.LogFile, PID and StopProcess.
	Name string
	// Manifests are the objects installed from the module's config: its
	// CRDs, its namespace and its webhook configurations.
	Manifests []*unstructured.Unstructured

	bin, healthz string
	env, args    []string
}

// KruiseModuleDir is where the pinned OpenKruise module's source is. go
// list -m reports no directory for a module not yet in the module cache (a
// cold machine); go mod download fetches it (checked against the
// committed go.sum) and says where it put it.
func KruiseModuleDir(ctx context.Context, root string) (string, error) {
	download := exec.CommandContext(ctx, "go", "mod", "download", "-json", KruiseModule)
	download.Dir = filepath.Join(root, "hack", "tools", "kruise")
	js, err := download.Output()
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", KruiseModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(js, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("downloading %s: no directory (%v) %s", KruiseModule, err, mod.Error)
	}
	return mod.Dir, nil
}

// KruiseConfig renders config/default of the pinned OpenKruise module with
// the cluster's kubectl (kustomize), keeping what an out-of-cluster manager
// needs: the CustomResourceDefinitions, the kruise-system namespace and
// the two webhook configurations.
func (c *Cluster) KruiseConfig(ctx context.Context) ([]*unstructured.Unstructured, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := KruiseModuleDir(ctx, root)
	if err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	render := exec.CommandContext(ctx, c.Binaries["kubectl"], "kustomize", filepath.Join(dir, "config", "default"))
	render.Stdout, render.Stderr = &out, &stderr
	if err := render.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize: %w: %s", err, stderr.String())
	}
	keep := map[string]bool{"CustomResourceDefinition": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true}
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if keep[obj.GetKind()] || (obj.GetKind() == "Namespace" && obj.GetName() == "kruise-system") {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// KruiseUser is the user kruise-manager runs as (a cluster admin), so that
// its requests can be told from others' in an audit log.
const KruiseUser = "kruise-manager"

// StartOpenKruise installs KruiseConfig, builds the pinned kruise-manager
// (once; cached), runs it as cluster-admin (KruiseUser) without leader
// election, with args added to its own, and returns once it serves:
// healthy, its webhook configurations pointing at it. Its controllers then
// run every OpenKruise kind.
func (c *Cluster) StartOpenKruise(ctx context.Context, progress io.Writer, args ...string) (*OpenKruise, error) {
	objs, err := c.KruiseConfig(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.Install(ctx, objs); err != nil {
		return nil, err
	}
	bin, err := binaries.Binary(ctx, "kruise-manager", progress)
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := c.writeKubeconfig(KruiseUser, pkix.Name{CommonName: KruiseUser, Organization: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	k := &OpenKruise{Name: "kruise-manager", Manifests: objs, bin: bin,
		healthz: fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1]),
		env: []string{"KUBECONFIG=" + kubeconfig, "WEBHOOK_HOST=127.0.0.1", fmt.Sprintf("WEBHOOK_PORT=%d", ports[0]),
			"WEBHOOK_CERT_DIR=" + filepath.Join(c.Dir, "kruise-webhook-certs"), "POD_NAMESPACE=kruise-system"},
		args: []string{"--enable-leader-election=false", "--enable-pprof=false",
			fmt.Sprintf("--health-probe-addr=127.0.0.1:%d", ports[1]), fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[2])},
	}
	k.args = append(k.args, args...)
	return k, c.StartOpenKruiseAgain(ctx, k)
}

// Install puts OpenKruise's manifests objs in place: the CRDs among them
// that exist already are replaced, then everything is applied.
func (c *Cluster) Install(ctx context.Context, objs []*unstructured.Unstructured) error {
	if err := c.replaceCRDs(ctx, objs); err != nil {
		return err
	}
	return c.Apply(ctx, objs)
}

// replaceCRDs replaces the CRDs among objs that exist (Lifeline's, in a
// swap) with objs' whole: an apply would merge the two conversion stanzas,
// Lifeline's webhook URL with OpenKruise's service, which the API server
// refuses.
func (c *Cluster) replaceCRDs(ctx context.Context, objs []*unstructured.Unstructured) error {
	crds := dynamic.NewForConfigOrDie(c.Config).Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		existing, err := crds.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		replacement := obj.DeepCopy()
		replacement.SetResourceVersion(existing.GetResourceVersion())
		if _, err := crds.Update(ctx, replacement, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("replacing CRD %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// StartOpenKruiseAgain starts a manager stopped with StopProcess (its
// Name) again and waits until it serves.
func (c *Cluster) StartOpenKruiseAgain(ctx context.Context, k *OpenKruise) error {
	if err := c.StartProcessEnv(k.Name, k.bin, k.env, k.args...); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "kruise-manager healthy", k.healthz); err != nil {
		return err
	}
	client := kubernetes.NewForConfigOrDie(c.Config)
	crds := dynamic.NewForConfigOrDie(c.Config).Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	own := map[string]bool{}
	for _, obj := range k.Manifests {
		if obj.GetKind() == "CustomResourceDefinition" {
			own[obj.GetName()] = true
		}
	}
	port := strings.TrimPrefix(k.env[2], "WEBHOOK_PORT=")
	// Its webhook configurations and its CRDs' conversions are patched one
	// after the other: a write right after the first met a conversion still
	// naming the module's webhook-service (11-29, under make test's load).
	return c.poll(ctx, "OpenKruise's webhooks and conversions pointing at kruise-manager", 2*time.Minute, func(ctx context.Context) (bool, error) {
		v, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "kruise-validating-webhook-configuration", metav1.GetOptions{})
		if err != nil || len(v.Webhooks) == 0 {
			return false, nil
		}
		url := v.Webhooks[0].ClientConfig.URL
		if url == nil || !strings.Contains(*url, "127.0.0.1:"+port) || len(v.Webhooks[0].ClientConfig.CABundle) == 0 {
			return false, nil
		}
		return kruiseConversionsAt(ctx, crds, own, "127.0.0.1:"+port)
	})
}

// kruiseConversionsAt reports whether every CRD named in own (those of
// OpenKruise's manifests: it patches those it knows, and it knows its own)
// that converts by webhook converts at host, with a CA bundle.
func kruiseConversionsAt(ctx context.Context, crds dynamic.ResourceInterface, own map[string]bool, host string) (bool, error) {
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, nil
	}
	for _, item := range list.Items {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &crd); err != nil {
			return false, err
		}
		conv := crd.Spec.Conversion
		if !own[crd.Name] || conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		if conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			return false, nil
		}
		cc := conv.Webhook.ClientConfig
		if cc.URL == nil || !strings.Contains(*cc.URL, host) || len(cc.CABundle) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// ApplyFiles applies the repository's manifests at paths (files or
// directories) with kubectl, as a user installing them would.
func (c *Cluster) ApplyFiles(ctx context.Context, paths ...string) error {
	args := []string{"--kubeconfig", c.Kubeconfig, "apply"}
	for _, p := range paths {
		args = append(args, "-f", p)
	}
	if out, err := exec.CommandContext(ctx, c.Binaries["kubectl"], args...).CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply %s: %w\n%s", strings.Join(paths, " "), err, out)
	}
	return nil
}

// Apply creates or updates objs by server-side apply, as cluster-admin,
// with the field manager lifeline-e2e.
func (c *Cluster) Apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	var docs [][]byte
	for _, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		docs = append(docs, data)
	}
	var stderr bytes.Buffer
	apply := exec.CommandContext(ctx, c.Binaries["kubectl"], "--kubeconfig", c.Kubeconfig, "apply", "--server-side",
		"--force-conflicts", "--field-manager=lifeline-e2e", "-f", "-")
	apply.Stdin = bytes.NewReader(bytes.Join(docs, []byte("\n---\n")))
	apply.Stdout, apply.Stderr = io.Discard, &stderr
	if err := apply.Run(); err != nil {
		return fmt.Errorf("kubectl apply: %w: %s", err, stderr.String())
	}
	return nil
}
