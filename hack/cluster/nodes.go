package cluster

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

func (c *Cluster) startNodes(ctx context.Context, opts Options) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if err := kwokDeletesByUID(ctx, client); err != nil {
		return err
	}
	profile := opts.Profile
	if profile == "" {
		profile = Instant
	}
	fmt.Fprintf(c.progress, "starting kwok with %d nodes, %s kubelets\n", opts.Nodes, profile)
	if err := c.startKwok(profile); err != nil {
		return err
	}
	for i := 0; i < opts.Nodes; i++ {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:     name,
				corev1.LabelOSStable:     "linux",
				corev1.LabelArchStable:   "amd64",
				corev1.LabelTopologyZone: opts.Zones[i%len(opts.Zones)],
				"type":                   "kwok",
				"node.lifeline.dev/fake": "true",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		}}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", name, err)
		}
		c.NodeNames = append(c.NodeNames, name)
	}
	// A node is schedulable once kwok reports it Ready and the node
	// lifecycle controller has lifted the not-ready taint that
	// TaintNodesByCondition put on it at registration.
	err = c.poll(ctx, "nodes Ready and untainted", 2*time.Minute, func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) && len(n.Spec.Taints) == 0 {
				ready++
			}
		}
		return ready >= opts.Nodes, nil
	})
	if err != nil {
		return err
	}
	return WaitForServiceAccount(ctx, client, metav1.NamespaceDefault)
}

// WaitForServiceAccount waits until the service account controller has made
// the default service account of namespace; pods cannot be created before.
func WaitForServiceAccount(ctx context.Context, client kubernetes.Interface, namespace string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Profile is the profile kwok runs with.
func (c *Cluster) Profile() Profile { return c.profile }

// startKwok runs kwok with the stages of profile.
func (c *Cluster) startKwok(profile Profile) error {
	c.profile = profile
	kwokConfig, err := c.writeKwokConfig(profile)
	if err != nil {
		return err
	}
	kwokKubeconfig, err := c.writeKubeconfig("kwok", pkix.Name{CommonName: "kwok", Organization: []string{"system:masters"}})
	if err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	return c.run("kwok",
		"--kubeconfig="+kwokKubeconfig,
		"--config="+kwokConfig,
		// Only the nodes it registers: a real node's status, lease and
		// pods are its kubelet's (kwok taking them over fakes a Running
		// pod whose sandbox failed).
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		// Leases keep nodes Ready without a status write every few
		// seconds; without them nodes flap NotReady.
		"--node-lease-duration-seconds=40",
		"--server-address="+fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.1/16",
	)
}

// UseProfile restarts kwok with the stages of profile. Pods keep running;
// what the new stages change applies from their next transition on.
func (c *Cluster) UseProfile(profile Profile) error {
	if err := c.StopProcess("kwok", syscall.SIGTERM); err != nil {
		return err
	}
	fmt.Fprintf(c.progress, "restarting kwok with the %s profile\n", profile)
	return c.startKwok(profile)
}

func (c *Cluster) writeKwokConfig(profile Profile) (string, error) {
	docs, err := profile.Stages()
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, "kwok-stages.yaml")
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644)
}
