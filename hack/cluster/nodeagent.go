package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// NodeAgentServiceAccount is the node agent's identity, which its
// admission policy (config/rbac/policy.yaml, the policy of Lifeline's
// identities) narrows.
const NodeAgentServiceAccount = "lifeline-node-agent"

// startNodeAgents runs Lifeline's node agent beside each real node's
// kubelet, as the chart's DaemonSet runs it on a node: its generated role,
// its admission policy, and its service account, through a token bound to
// the node (which names the node to the policy, as a pod-bound token of
// the DaemonSet's pod does). It reaches the node's containerd through the
// socket on this machine.
func (c *Cluster) startNodeAgents(ctx context.Context, root, dir string) error {
	if len(c.realNodes) == 0 {
		return nil
	}
	bin := filepath.Join(dir, "bin", "lifeline-node-agent")
	if err := goBuild(ctx, root, bin, "./cmd/lifeline-node-agent"); err != nil {
		return err
	}
	if err := c.ApplyFiles(ctx, filepath.Join(root, "config", "nodeagent"), filepath.Join(root, "config", "rbac", "policy.yaml")); err != nil {
		return fmt.Errorf("applying the node agent's RBAC and policy: %w", err)
	}
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ManagerNamespace, Name: NodeAgentServiceAccount}}
	if _, err := client.CoreV1().ServiceAccounts(ManagerNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: NodeAgentServiceAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: NodeAgentServiceAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ManagerNamespace, Name: NodeAgentServiceAccount}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, n := range c.realNodes {
		kubeconfig, err := c.NodeBoundKubeconfig(ctx, NodeAgentServiceAccount, n.name)
		if err != nil {
			return err
		}
		ports, err := FreePorts(1)
		if err != nil {
			return err
		}
		name := "lifeline-node-agent-" + n.name
		if err := c.StartProcess(name, bin, "--kubeconfig="+kubeconfig, "--node-name="+n.name, "--cri-endpoint=unix://"+n.socket(),
			"--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[0])); err != nil {
			return err
		}
		if err := c.waitHTTP(ctx, name, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0])); err != nil {
			return err
		}
	}
	return nil
}

// NodeBoundKubeconfig writes a kubeconfig for the service account of the
// manager's namespace through a token bound to node: the API server names
// the node in the user's extra (authentication.kubernetes.io/node-name)
// and refuses the token once the node is gone. It lasts two days.
func (c *Cluster) NodeBoundKubeconfig(ctx context.Context, serviceAccount, node string) (string, error) {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	expiry := int64((48 * time.Hour).Seconds())
	token, err := client.CoreV1().ServiceAccounts(ManagerNamespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node, UID: n.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of %s bound to node %s: %w", serviceAccount, node, err)
	}
	return c.writeKubeconfigAs(c.server, serviceAccount+"-"+node, serviceAccount, &clientcmdapi.AuthInfo{Token: token.Status.Token})
}
