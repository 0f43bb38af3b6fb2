// Command cert-manager runs cert-manager's own controllers, built from its
// pinned module (github.com/cert-manager/cert-manager): the issuers, the
// certificates' life (trigger, key manager, request manager, issuing,
// readiness, revisions), the approver, the CA and self-signed issuers,
// and the CA injector for webhook configurations and CRDs. It is cert-
// manager's controller and cainjector as their own mains wire them, with
// only what the chart's cert-manager mode uses: the module's
// cmd/controller and cmd/cainjector are modules of their own, which the
// proxy here does not serve. The local cluster runs it outside the
// cluster, as the other control-plane programs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/api"
	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
)

var controllers = []string{
	"issuers", "certificaterequests-approver", "certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
	"certificates-trigger", "certificates-key-manager", "certificates-request-manager", "certificates-issuing",
	"certificates-readiness", "certificates-revision-manager",
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	// controller-runtime registers --kubeconfig itself.
	gates := flag.String("feature-gates", "", "cert-manager's feature gates, as its components take them (e.g. CAInjectorMerging=false: the injector replaces a webhook configuration's caBundle instead of adding to it, as cert-manager did before the gate)")
	flag.Parse()
	if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
		return fmt.Errorf("--feature-gates: %w", err)
	}
	ctrl.SetLogger(klog.NewKlogr())
	kubeconfig := new(string)
	if f := flag.Lookup("kubeconfig"); f != nil {
		*kubeconfig = f.Value.String()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig: *kubeconfig, KubernetesAPIQPS: 50, KubernetesAPIBurst: 100,
		IssuerOptions: controllerpkg.IssuerOptions{ClusterResourceNamespace: "cert-manager"},
	})
	if err != nil {
		return err
	}
	var loops []controllerpkg.Interface
	for _, name := range controllers {
		construct, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("no controller %s in this cert-manager", name)
		}
		c, err := construct(factory)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		loops = append(loops, c)
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	errs := make(chan error, len(loops)+1)
	for _, c := range loops {
		go func() { errs <- c.Run(2, ctx) }()
	}
	go func() { errs <- injector(ctx, *kubeconfig) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

// injector runs the CA injector for webhook configurations and CRDs, with
// the Certificate data source the chart's annotation names.
func injector(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// Its field manager for the caBundle it applies, as cert-manager names it.
	cfg.UserAgent = "cert-manager-cainjector/v1.21.2"
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme, cmapi.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{cainjector.MutatingWebhookConfigurationName: true, cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.CustomResourceDefinitionName: true}}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
