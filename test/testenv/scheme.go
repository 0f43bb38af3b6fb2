package testenv

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/internal/manager"
)

// Scheme is the one scheme every suite reads and writes with: the
// manager's (Kubernetes' types and every version Lifeline serves) and the
// CRD types.
func Scheme() *runtime.Scheme {
	s := manager.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err) // the types' own registration failed: a build defect
	}
	return s
}

// Client is a controller-runtime client of cfg with Scheme.
func Client(cfg *rest.Config) (ctrlclient.Client, error) {
	return ctrlclient.New(cfg, ctrlclient.Options{Scheme: Scheme()})
}
