package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/admissiontest"
)

// FuzzAdmission posts arbitrary AdmissionReviews, seeded with the golden
// corpus's sets, to the Advanced StatefulSet webhooks: no panic, and every
// refusal a 4xx with a message.
func FuzzAdmission(f *testing.F) {
	admissiontest.Seed(f, "testdata/corpus.yaml", "StatefulSet", "statefulsets")
	scheme := runtime.NewScheme()
	if err := appsv1beta1.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	server := &admissiontest.Server{}
	Register(server, admission.NewDecoder(scheme), Options{AutoDeletePVC: true})
	f.Fuzz(func(t *testing.T, review []byte) { admissiontest.Check(t, server, review) })
}
