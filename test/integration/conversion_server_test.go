package integration

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

// serveConversion serves the CRDs' conversion webhook from this process,
// as the manager does, and points the CRDs at it: they store v1beta1, so
// every v1alpha1 request below goes through it. It returns once the API
// server converts.
func serveConversion(ctx context.Context, c client.Client) (func(), error) {
	h, err := conversion.Handler(testenv.Scheme(), conversion.CloneSet, conversion.PersistentPodState, conversion.PodUnavailableBudget)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(conversion.Path, h)
	srv := httptest.NewTLSServer(mux)
	url := srv.URL + conversion.Path
	cc := apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	for _, name := range cluster.ConvertedCRDs {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if !conversion.PointConversion(crd, cc, false) {
				return nil
			}
			return c.Update(ctx, crd)
		})
		if err != nil {
			srv.Close()
			return nil, fmt.Errorf("pointing %s at the conversion server: %w", name, err)
		}
	}
	// The API server picks the change up asynchronously; a dry-run create
	// in v1alpha1 converts to the stored version once it has.
	one := intstr.FromInt32(1)
	probe := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "conversion-probe"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{}, MaxUnavailable: &one}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return last == nil, nil
	})
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("the API server does not convert through %s: %v", url, last)
	}
	return srv.Close, nil
}
