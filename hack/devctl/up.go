package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// up is make dev: a local cluster with the CRDs installed, the manager
// running against it and the seed scenario applied, kept up until
// interrupted and then torn down whole.
func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	nodes := fs.Int("nodes", 3, "number of simulated nodes")
	devDir := fs.String("dir", "", "folder for the kubeconfig, the ready marker and the cluster (default .dev in the repository)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	if *devDir == "" {
		*devDir = filepath.Join(root, ".dev")
	}
	return serve(ctx, root, *devDir, *nodes)
}

func serve(ctx context.Context, root, devDir string, nodes int) error {
	ready := filepath.Join(devDir, "ready")
	_ = os.Remove(ready)
	// Each run starts from a clean cluster folder: the previous run's
	// etcd data and certificates belong to processes that are gone.
	if err := os.RemoveAll(filepath.Join(devDir, "cluster")); err != nil {
		return err
	}
	if err := os.MkdirAll(devDir, 0o755); err != nil {
		return err
	}

	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(devDir, "cluster"), Nodes: nodes, Progress: os.Stdout})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping the local cluster")
		c.Stop()
		_ = os.Remove(ready)
	}()

	fmt.Println("installing CRDs")
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfPathMissing: true,
	}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if err := startManager(ctx, c, root, devDir); err != nil {
		return err
	}
	kubectl := c.Binaries["kubectl"]
	fmt.Println("applying the seed scenario (config/samples)")
	apply := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-f", filepath.Join(root, "config", "samples"))
	apply.Stdout, apply.Stderr = os.Stdout, os.Stderr
	if err := apply.Run(); err != nil {
		return fmt.Errorf("applying samples: %w", err)
	}

	kubeconfig := filepath.Join(devDir, "kubeconfig")
	if err := copyFile(c.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	if err := os.WriteFile(ready, []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf(`
Lifeline's local cluster is up. Press Ctrl-C to stop it.

  kubeconfig: %[1]s
  logs:       %[3]s

Try:
  export KUBECONFIG=%[1]s
  alias kubectl=%[2]s
  kubectl get nodes -L topology.kubernetes.io/zone
  kubectl -n demo get clonesets
  kubectl -n demo get clone cloneset-lifecycle-demo -o yaml
  kubectl get crd | grep kruise.io
`, kubeconfig, kubectl, filepath.Join(c.Dir, "logs"))

	// Stay up until interrupted, or until a component dies: a cluster
	// missing a component is not worth keeping up silently.
	err = wait.PollUntilContextCancel(ctx, time.Second, false, func(context.Context) (bool, error) {
		return false, c.Exited()
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// startManager builds lifeline-manager, grants it the generated ClusterRole
// under a client certificate of its own, installs the webhook
// configurations pointing at it, and runs it next to the cluster until it
// is ready, webhooks included.
func startManager(ctx context.Context, c *cluster.Cluster, root, devDir string) error {
	fmt.Println("building and starting lifeline-manager")
	bin := filepath.Join(devDir, "bin", "lifeline-manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lifeline-manager")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building lifeline-manager: %w", err)
	}
	kubectl := c.Binaries["kubectl"]
	role := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.Kubeconfig, "apply", "-f", filepath.Join(root, "config", "rbac"))
	role.Stdout, role.Stderr = io.Discard, os.Stderr
	if err := role.Run(); err != nil {
		return fmt.Errorf("applying RBAC: %w", err)
	}
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	const user = "lifeline-manager"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lifeline-manager-dev"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lifeline-manager"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	kubeconfig, err := c.WriteKubeconfig(user)
	if err != nil {
		return err
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return err
	}
	// The API server reaches the webhooks on loopback, by the name
	// localhost, which the manager's self-managed certificate is issued for.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lifeline-system"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := cluster.InstallWebhooks(ctx, c.Config, filepath.Join(root, "config", "webhook", "manifests.yaml"), "localhost", ports[2],
		cluster.WebhookNames{Mutating: "lifeline-mutating-webhooks", Validating: "lifeline-validating-webhooks"}); err != nil {
		return err
	}
	err = c.StartProcess("lifeline-manager", bin,
		"--kubeconfig="+kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		"--webhook-host=127.0.0.1",
		fmt.Sprintf("--webhook-port=%d", ports[2]),
		"--webhook-cert-dir="+filepath.Join(devDir, "cluster", "webhook-certs"),
		"--webhook-dns-name=localhost",
		"--leader-election-namespace=lifeline-system",
	)
	if err != nil {
		return err
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		resp, err := http.Get(readyz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
