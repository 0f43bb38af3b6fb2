// Command webhookselectors finishes the generated webhook configurations
// with what controller-gen has no marker for, so that make generate (and
// verifygen) produce them whole:
//   - the names that the manager's defaults, config/default and the chart
//     use: the configurations lifeline-mutating-webhooks and
//     lifeline-validating-webhooks, served by lifeline-system/lifeline-webhook;
//   - the pod webhooks' namespaceSelector: system namespaces left out, and
//     each fail-closed webhook pointed at the namespaces labelled for its
//     kind of protection, its fail-open twin at all others
//     (internal/protection);
//   - the matchConditions and objectSelectors the features declare;
//   - the conversion stanza of the CRDs served in two versions.
package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/lifeline-k8s/lifeline/internal/manager"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/protection"
)

const manifests = "config/webhook/manifests.yaml"

// Names the install uses; the manager's flags default to the same.
const (
	MutatingName   = "lifeline-mutating-webhooks"
	ValidatingName = "lifeline-validating-webhooks"
	Namespace      = "lifeline-system"
	ServiceName    = "lifeline-webhook"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "webhookselectors:", err)
		os.Exit(1)
	}
}

func run() error {
	data, err := os.ReadFile(manifests)
	if err != nil {
		return err
	}
	features := manager.Features()
	conditions, err := manager.MatchConditions(features)
	if err != nil {
		return err
	}
	objects, err := manager.ObjectSelectors(features)
	if err != nil {
		return err
	}
	failClosed, err := manager.FailClosed(features)
	if err != nil {
		return err
	}
	d := decorator{conditions: conditions, objects: objects, failClosed: failClosed, twins: map[string]protection.Kind{}}
	for name, kind := range failClosed {
		d.twins[protection.Twin(name)] = kind
	}
	var out bytes.Buffer
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, err := d.decorate([]byte(doc))
		if err != nil {
			return err
		}
		if obj == nil {
			continue
		}
		text, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out.WriteString("---\n")
		out.Write(text)
	}
	if missing := d.missing(); len(missing) > 0 {
		return fmt.Errorf("%s: no webhook named %s", manifests, strings.Join(missing, ", "))
	}
	if err := os.WriteFile(manifests, out.Bytes(), 0o644); err != nil {
		return err
	}
	var kinds []schema.GroupKind
	for _, f := range features {
		kinds = append(kinds, f.Conversions...)
	}
	return addConversions(kinds)
}

type decorator struct {
	conditions map[string][]podadmission.MatchCondition
	objects    map[string]*metav1.LabelSelector
	failClosed map[string]protection.Kind
	twins      map[string]protection.Kind
	seen       []string
	named      []string // every webhook of the manifests
}

// decorate finishes one document; nil for an empty one.
func (d *decorator) decorate(doc []byte) (any, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	switch meta.Kind {
	case "":
		return nil, nil
	case "MutatingWebhookConfiguration":
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(doc, m); err != nil {
			return nil, err
		}
		m.Name = MutatingName
		for i := range m.Webhooks {
			w := &m.Webhooks[i]
			w.NamespaceSelector, w.MatchConditions = d.selectors(w.Name)
			w.ObjectSelector = d.objects[w.Name]
			d.named = append(d.named, w.Name)
			service(&w.ClientConfig)
		}
		return m, nil
	case "ValidatingWebhookConfiguration":
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(doc, v); err != nil {
			return nil, err
		}
		v.Name = ValidatingName
		for i := range v.Webhooks {
			w := &v.Webhooks[i]
			w.NamespaceSelector, w.MatchConditions = d.selectors(w.Name)
			w.ObjectSelector = d.objects[w.Name]
			d.named = append(d.named, w.Name)
			service(&w.ClientConfig)
		}
		return v, nil
	}
	return nil, fmt.Errorf("unexpected kind %s", meta.Kind)
}

// selectors are a webhook's namespaceSelector and matchConditions: none
// for the webhooks of Lifeline's own kinds (their objects ask for them).
func (d *decorator) selectors(name string) (*metav1.LabelSelector, []admissionregistrationv1.MatchCondition) {
	base := name
	if kind, ok := d.twins[name]; ok {
		// The twin takes the conditions of the webhook it mirrors.
		for closed := range d.failClosed {
			if protection.Twin(closed) == name {
				base = closed
			}
		}
		d.seen = append(d.seen, name)
		return selector(nil, metav1.LabelSelectorRequirement{Key: kind.Label(), Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}), d.matchConditions(base)
	}
	if kind, ok := d.failClosed[name]; ok {
		d.seen = append(d.seen, name)
		return selector([]string{Namespace}, metav1.LabelSelectorRequirement{Key: kind.Label(), Operator: metav1.LabelSelectorOpIn, Values: []string{"true"}}), d.matchConditions(name)
	}
	if strings.HasSuffix(name, ".lifeline.dev") {
		// A pod webhook that fails open everywhere.
		return selector(nil), d.matchConditions(name)
	}
	return nil, nil
}

func (d *decorator) matchConditions(name string) []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for _, c := range d.conditions[name] {
		out = append(out, admissionregistrationv1.MatchCondition{Name: c.Name, Expression: c.Expression})
	}
	return out
}

// missing are the webhooks the features name (fail-closed ones and their
// twins, or for conditions or a selector) that the manifests lack.
func (d *decorator) missing() []string {
	var out []string
	for name := range d.failClosed {
		for _, n := range []string{name, protection.Twin(name)} {
			if !slices.Contains(d.seen, n) {
				out = append(out, n)
			}
		}
	}
	// Conditions or a selector for a webhook that is not there would be
	// dropped without a word.
	for _, names := range [][]string{slices.Collect(maps.Keys(d.conditions)), slices.Collect(maps.Keys(d.objects))} {
		for _, n := range names {
			if !slices.Contains(d.named, n) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// selector leaves out the system namespaces and those in also, and asks
// for the extra requirements.
func selector(also []string, extra ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: append([]metav1.LabelSelectorRequirement{{
		Key: corev1NamespaceName, Operator: metav1.LabelSelectorOpNotIn, Values: slices.Concat(podadmission.SystemNamespaces, also),
	}}, extra...)}
}

const corev1NamespaceName = "kubernetes.io/metadata.name"

func service(cc *admissionregistrationv1.WebhookClientConfig) {
	if cc.Service != nil {
		cc.Service.Name, cc.Service.Namespace = ServiceName, Namespace
	}
}
