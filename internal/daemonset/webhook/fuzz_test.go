package webhook

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/admissiontest"
)

// FuzzAdmission posts arbitrary AdmissionReviews, seeded with the golden
// corpus's admissions, to the Advanced DaemonSet webhooks: no panic, and
// every refusal a 4xx with a message.
func FuzzAdmission(f *testing.F) {
	for _, c := range readCorpus(f) {
		version := strings.TrimPrefix(apiVersionOfRaw(c.Object), "apps.kruise.io/")
		op := admissionv1.Create
		if c.Old != nil {
			op = admissionv1.Update
		}
		f.Add(admissiontest.Review("apps.kruise.io", version, "daemonsets", "DaemonSet", op, c.Object, c.Old))
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			f.Fatal(err)
		}
	}
	server := &admissiontest.Server{}
	Register(server, admission.NewDecoder(scheme))
	f.Fuzz(func(t *testing.T, review []byte) { admissiontest.Check(t, server, review) })
}
