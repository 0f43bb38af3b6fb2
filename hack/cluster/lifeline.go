package cluster

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// LifelineOptions say how to run lifeline-manager next to the cluster.
type LifelineOptions struct {
	// Root is the repository to build the manager from.
	Root string
	// Dir holds the built binary and the webhook certificates.
	Dir string
	// QPS is the manager's client QPS (burst 1.5 times it); its default
	// when zero.
	QPS int
	// Args are more flags for the manager.
	Args []string
	// Server, if set, is where the manager reaches the API server (a
	// proxy in front of it); the cluster's own address when empty.
	Server string
}

// Lifeline is a running lifeline-manager.
type Lifeline struct {
	// Name is the process name, for Cluster.LogFile and PID.
	Name string
	// MetricsURL serves the manager's Prometheus metrics, to Scraper.
	MetricsURL string
	// Scraper may read MetricsURL.
	Scraper *Scraper

	bin         string
	args        []string
	readyz      string
	webhookPort int
}

// StartLifeline builds lifeline-manager, grants it the generated ClusterRole
// under a client certificate of its own (user lifeline-manager), installs
// the webhook configurations pointing at it on loopback, runs it, and
// returns once it is ready, webhooks included. The API server reaches the
// webhooks by the name localhost, which the manager's self-managed
// certificate is issued for.
func (c *Cluster) StartLifeline(ctx context.Context, o LifelineOptions) (*Lifeline, error) {
	bin := filepath.Join(o.Dir, "bin", "lifeline-manager")
	if err := goBuild(ctx, o.Root, bin, "./cmd/lifeline-manager"); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	// The generated Role lives in the manager's namespace.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ManagerNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	// The generated roles, bound below to the user the manager runs as
	// here (config/rbac's bindings name the in-cluster service account).
	rbac := filepath.Join(o.Root, "config", "rbac")
	if err := c.ApplyFiles(ctx, filepath.Join(rbac, "role.yaml"), filepath.Join(rbac, "metrics_reader_role.yaml"), filepath.Join(rbac, "policy.yaml")); err != nil {
		return nil, fmt.Errorf("applying RBAC: %w", err)
	}
	const user = "lifeline-manager"
	if err := bindUser(ctx, client, user, "lifeline-manager"); err != nil {
		return nil, err
	}
	kubeconfig, err := c.WriteKubeconfigVia(cmp.Or(o.Server, c.server), user, user, ManagersGroup)
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	if _, err := InstallWebhooks(ctx, c.Config, filepath.Join(o.Root, "config", "webhook", "manifests.yaml"), "localhost", ports[2], WebhookNames{}); err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		"--webhook-host=127.0.0.1",
		fmt.Sprintf("--webhook-port=%d", ports[2]),
		"--webhook-cert-dir=" + filepath.Join(o.Dir, "webhook-certs"),
		"--webhook-dns-name=localhost",
		fmt.Sprintf("--webhook-url=https://localhost:%d", ports[2]),
		"--namespace=" + ManagerNamespace,
	}
	args = append(args, c.WebhookClientArgs()...)
	if o.QPS > 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%d", o.QPS), fmt.Sprintf("--kube-api-burst=%d", o.QPS*3/2))
	}
	l := &Lifeline{Name: "lifeline-manager", MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0]),
		bin: bin, args: append(args, o.Args...), readyz: fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), webhookPort: ports[2]}
	if l.Scraper, err = c.Scraper(ctx); err != nil {
		return nil, err
	}
	if err := c.StartProcess(l.Name, l.bin, l.args...); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, l); err != nil {
		return l, err
	}
	return l, c.startNodeAgents(ctx, o.Root, o.Dir)
}

// ManagersGroup is the group whose members the manager's admission policy
// (config/rbac/policy.yaml) narrows: the local manager's user is in it.
const ManagersGroup = "lifeline.dev:managers"

// ManagerNamespace is where the local cluster runs the manager's namespaced
// objects (its lease, its certificate Secret), as config/default does.
const ManagerNamespace = "lifeline-system"

// bindUser binds a user to the generated ClusterRole and, in the
// manager's namespace, the Role of the same name.
func bindUser(ctx context.Context, client kubernetes.Interface, user, role string) error {
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-local"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ManagerNamespace, Name: role + "-local"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
	if _, err := client.RbacV1().RoleBindings(ManagerNamespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// RestartLifeline stops the manager as a rollout or an OOM kill would
// (sig: SIGTERM lets it release its leader lease, SIGKILL does not) and
// starts the same binary with the same flags: a fresh cache and fresh
// expectations. It returns once the new process is ready.
func (c *Cluster) RestartLifeline(ctx context.Context, l *Lifeline, sig syscall.Signal) error {
	if err := c.StopProcess(l.Name, sig); err != nil {
		return err
	}
	if err := c.StartProcess(l.Name, l.bin, l.args...); err != nil {
		return err
	}
	return c.waitReady(ctx, l)
}

func (c *Cluster) waitReady(ctx context.Context, l *Lifeline) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		resp, err := http.Get(l.readyz)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// WebhookAddr is where the manager serves its webhooks.
func (l *Lifeline) WebhookAddr() string { return fmt.Sprintf("127.0.0.1:%d", l.webhookPort) }

// WithArgs is l with more flags: restart it (RestartLifeline) to run the
// same manager differently; restart l to undo it.
func (l *Lifeline) WithArgs(args ...string) *Lifeline {
	c := *l
	c.args = append(slices.Clone(l.args), args...)
	return &c
}

// PID returns the process id of a component's newest start, or 0.
func (c *Cluster) PID(name string) int {
	if p := c.process(name); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// StartLifelineAgain starts a manager stopped with StopProcess (its Name)
// again, with the same flags, and returns once it is ready.
func (c *Cluster) StartLifelineAgain(ctx context.Context, l *Lifeline) error {
	if err := c.StartProcess(l.Name, l.bin, l.args...); err != nil {
		return err
	}
	return c.waitReady(ctx, l)
}
