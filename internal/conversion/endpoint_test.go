package conversion

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestPointConversion(t *testing.T) {
	service := func(ns string, ca string) apiextensionsv1.WebhookClientConfig {
		return apiextensionsv1.WebhookClientConfig{CABundle: []byte(ca),
			Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: "lifeline-webhook", Path: ptr.To(Path), Port: ptr.To[int32](443)}}
	}
	url := func(u, ca string) apiextensionsv1.WebhookClientConfig {
		return apiextensionsv1.WebhookClientConfig{CABundle: []byte(ca), URL: ptr.To(u)}
	}
	crdWith := func(cc *apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceDefinition {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if cc != nil {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: []string{"v1"}}}
		}
		return crd
	}
	none := crdWith(nil)
	none.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		want    apiextensionsv1.WebhookClientConfig
		located bool
		changed bool
	}{
		{"no conversion", crdWith(nil), service("lifeline-system", "ca"), false, true},
		{"strategy None (OpenKruise's budget CRD)", none, service("lifeline-system", "ca"), true, true},
		{"as wanted", crdWith(ptr.To(service("lifeline-system", "ca"))), service("lifeline-system", "ca"), false, false},
		{"manifest without the CA", crdWith(ptr.To(service("lifeline-system", ""))), service("lifeline-system", "ca"), false, true},
		{"rotated CA", crdWith(ptr.To(service("lifeline-system", "old"))), service("lifeline-system", "new"), true, true},
		{"chart in another namespace", crdWith(ptr.To(service("lifeline-system", "ca"))), service("platform", "ca"), false, true},
		{"OpenKruise's Service", crdWith(ptr.To(apiextensionsv1.WebhookClientConfig{CABundle: []byte("ca"),
			Service: &apiextensionsv1.ServiceReference{Namespace: "kruise-system", Name: "kruise-webhook-service", Path: ptr.To(Path)}})),
			service("lifeline-system", "ca"), false, true},
		{"outside the cluster, first time", crdWith(ptr.To(service("lifeline-system", "ca"))), url("https://localhost:1/convert", "ca"), false, true},
		{"outside the cluster, another replica's URL", crdWith(ptr.To(url("https://localhost:2/convert", "ca"))), url("https://localhost:1/convert", "ca"), true, false},
		{"outside the cluster, CA replaced", crdWith(ptr.To(url("https://localhost:2/convert", "x"))), url("https://localhost:1/convert", "ca"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := tc.crd.DeepCopy()
			if got := PointConversion(crd, tc.want, tc.located); got != tc.changed {
				t.Fatalf("changed %v, want %v", got, tc.changed)
			}
			if !tc.changed {
				return
			}
			c := crd.Spec.Conversion
			if c.Strategy != apiextensionsv1.WebhookConverter || string(c.Webhook.ClientConfig.CABundle) != string(tc.want.CABundle) ||
				!ptr.Equal(c.Webhook.ClientConfig.URL, tc.want.URL) || (tc.want.Service != nil && *c.Webhook.ClientConfig.Service != *tc.want.Service) {
				t.Errorf("conversion %+v, want client config %+v", c.Webhook, tc.want)
			}
			if PointConversion(crd, tc.want, tc.located) {
				t.Error("pointing it again changed it again")
			}
		})
	}
}
