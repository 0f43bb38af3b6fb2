package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/admissiontest"
)

// FuzzAdmission posts arbitrary AdmissionReviews, seeded with the
// conversion corpus's budgets, to the PodUnavailableBudget webhook: no
// panic, and every refusal a 4xx with a message.
func FuzzAdmission(f *testing.F) {
	admissiontest.Seed(f, "../../conversion/testdata/corpus.yaml", "PodUnavailableBudget", "podunavailablebudgets")
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			f.Fatal(err)
		}
	}
	server := &admissiontest.Server{}
	Register(server, admission.NewDecoder(scheme), fake.NewClientBuilder().WithScheme(scheme).Build())
	f.Fuzz(func(t *testing.T, review []byte) { admissiontest.Check(t, server, review) })
}
