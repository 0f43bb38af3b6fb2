package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Kubelet is what the agent asks of its node's kubelet.
type Kubelet interface {
	// Pod is the kubelet's own copy of a pod (nil when it has none): the
	// one it starts containers from.
	Pod(ctx context.Context, uid types.UID) (*corev1.Pod, error)
}

// KubeletClient reads the kubelet's pods (GET /pods, which the kubelet
// authorizes as get nodes/pods).
type KubeletClient struct {
	url  string
	http *http.Client
}

// NewKubeletClient calls the kubelet at url with the credentials of cfg
// (the agent's token), trusting caFile for the kubelet's serving
// certificate (empty: the API server's CA), or nothing with insecure
// (kubelets often serve a self-signed one).
func NewKubeletClient(cfg *rest.Config, url, caFile string, insecure bool) (*KubeletClient, error) {
	kc := rest.AnonymousClientConfig(cfg)
	kc.BearerToken, kc.BearerTokenFile = cfg.BearerToken, cfg.BearerTokenFile
	kc.CertFile, kc.KeyFile, kc.CertData, kc.KeyData = cfg.CertFile, cfg.KeyFile, cfg.CertData, cfg.KeyData
	if caFile != "" {
		kc.TLSClientConfig.CAFile, kc.TLSClientConfig.CAData = caFile, nil
	}
	kc.TLSClientConfig.Insecure = insecure
	if insecure {
		kc.TLSClientConfig.CAFile, kc.TLSClientConfig.CAData = "", nil
	}
	kc.TLSClientConfig.ServerName = ""
	client, err := rest.HTTPClientFor(kc)
	if err != nil {
		return nil, err
	}
	return &KubeletClient{url: strings.TrimSuffix(url, "/"), http: client}, nil
}

// Pod finds the pod of uid in the kubelet's list.
func (k *KubeletClient) Pod(ctx context.Context, uid types.UID) (*corev1.Pod, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url+"/pods", nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the kubelet for its pods: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("asking the kubelet for its pods: %s (the agent needs get nodes/pods)", resp.Status)
	}
	var list corev1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("reading the kubelet's pods: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].UID == uid {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// KubeletURL is the kubelet API of node, as its status gives it: its
// InternalIP and the port the kubelet registered.
func KubeletURL(ctx context.Context, cfg *rest.Config, node string) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading node %s for its kubelet's address: %w", node, err)
	}
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && port > 0 {
			return "https://" + net.JoinHostPort(a.Address, strconv.Itoa(int(port))), nil
		}
	}
	return "", fmt.Errorf("node %s has no InternalIP or kubelet port in its status; give --kubelet-url", node)
}
