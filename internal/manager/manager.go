// Package manager registers every Lifeline controller and webhook with a
// controller-runtime manager. The lifeline-manager binary and the end-to-end
// tests both wire Lifeline through it, so tests run what ships.
package manager

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	clonesetcontroller "github.com/lifeline-k8s/lifeline/internal/cloneset/controller"
)

// Options configure the controllers.
type Options struct {
	CloneSetWorkers                int
	ExpectationTimeout             time.Duration
	CloneSetExcludePreparingDelete bool
}

// Scheme holds every type Lifeline reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(appsv1alpha1.AddToScheme(s))
	utilruntime.Must(policyv1alpha1.AddToScheme(s))
	return s
}

// Setup registers the controllers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	cs := &clonesetcontroller.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("cloneset-controller"),
		Options: clonesetcontroller.Options{
			Workers:                o.CloneSetWorkers,
			ExpectationTimeout:     o.ExpectationTimeout,
			ExcludePreparingDelete: o.CloneSetExcludePreparingDelete,
		},
	}
	return cs.SetupWithManager(ctx, mgr)
}
