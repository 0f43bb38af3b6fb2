package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// WebhookNames rename the webhook configurations when installed for a
// manager running outside the cluster (tests that share an API server);
// empty keeps the generated names.
type WebhookNames struct {
	Mutating, Validating string
}

// InstallWebhooks installs the generated webhook configurations
// (config/webhook/manifests.yaml) for a webhook server outside the cluster:
// each webhook calls https://<host>:<port><path> instead of a Service, and
// the caBundle is left for the manager's certificate rotation to fill in.
// Only the webhooks named in only are kept, when any are named. It returns
// a function that removes them again.
func InstallWebhooks(ctx context.Context, cfg *rest.Config, manifests, host string, port int, names WebhookNames, only ...string) (func(context.Context) error, error) {
	data, err := os.ReadFile(manifests)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	url := func(cc *admissionregistrationv1.WebhookClientConfig) {
		u := fmt.Sprintf("https://%s:%d", host, port)
		if cc.Service != nil && cc.Service.Path != nil {
			u += *cc.Service.Path
		}
		cc.URL, cc.Service = &u, nil
	}
	kept := func(name string) bool { return len(only) == 0 || slices.Contains(only, name) }
	var objs []client.Object
	for _, doc := range strings.Split(string(data), "\n---") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict([]byte(doc), m); err != nil {
				return nil, err
			}
			m.Name = cmp.Or(names.Mutating, m.Name)
			m.Webhooks = slices.DeleteFunc(m.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return !kept(w.Name) })
			for i := range m.Webhooks {
				url(&m.Webhooks[i].ClientConfig)
			}
			if len(m.Webhooks) > 0 {
				objs = append(objs, m)
			}
		case "ValidatingWebhookConfiguration":
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
				return nil, err
			}
			v.Name = cmp.Or(names.Validating, v.Name)
			v.Webhooks = slices.DeleteFunc(v.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return !kept(w.Name) })
			for i := range v.Webhooks {
				url(&v.Webhooks[i].ClientConfig)
			}
			if len(v.Webhooks) > 0 {
				objs = append(objs, v)
			}
		}
	}
	remove := func(ctx context.Context) error {
		var errs []error
		for _, obj := range objs {
			if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	// A leftover of an earlier run would point at a server that is gone.
	if err := remove(ctx); err != nil {
		return nil, err
	}
	for _, obj := range objs {
		obj.SetResourceVersion("")
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
	}
	return remove, nil
}
