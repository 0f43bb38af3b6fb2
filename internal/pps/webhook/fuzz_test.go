package webhook

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/admissiontest"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
)

// FuzzAdmission posts arbitrary AdmissionReviews, seeded with the
// conversion corpus's PersistentPodStates, to the PersistentPodState
// webhook: no panic, and every refusal a 4xx with a message.
func FuzzAdmission(f *testing.F) {
	admissiontest.Seed(f, "../../conversion/testdata/corpus.yaml", "PersistentPodState", "persistentpodstates")
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			f.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	server := &admissiontest.Server{}
	Register(server, admission.NewDecoder(scheme), c, &workloads.Whitelist{Reader: c, ConfigMap: types.NamespacedName{Namespace: "lifeline-system", Name: "whitelist"}})
	f.Fuzz(func(t *testing.T, review []byte) { admissiontest.Check(t, server, review) })
}
