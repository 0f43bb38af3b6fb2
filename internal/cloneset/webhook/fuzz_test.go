package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/admissiontest"
)

// FuzzAdmission posts arbitrary AdmissionReviews, seeded with the revision
// corpus's CloneSets, to the CloneSet webhooks: no panic, and every
// refusal a 4xx with a message.
func FuzzAdmission(f *testing.F) {
	admissiontest.Seed(f, "../../revision/testdata/corpus.yaml", "CloneSet", "clonesets")
	scheme := runtime.NewScheme()
	if err := appsv1alpha1.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	server := &admissiontest.Server{}
	Register(server, admission.NewDecoder(scheme), fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build())
	f.Fuzz(func(t *testing.T, review []byte) { admissiontest.Check(t, server, review) })
}
