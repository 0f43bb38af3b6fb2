// Command lifeline-node-agent runs on each node (a DaemonSet of the chart,
// nodeAgent.enabled) and restarts the containers whose env reads labels or
// annotations an in-place update changed; see internal/nodeagent. It talks
// to the node's container runtime over the CRI socket and, with its own
// identity, reads the node's pods and writes one annotation on them.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lifeline-k8s/lifeline/internal/metricsauth"
	"github.com/lifeline-k8s/lifeline/internal/nodeagent"
	"github.com/lifeline-k8s/lifeline/pkg/recorder"
)

// The agent's identity may read and patch pods (the admission policy of
// Lifeline's identities, config/rbac/policy.yaml, narrows its patches to
// its report on pods of its own node), post events, read its node (the kubelet's address and
// port) and its kubelet's pods (nodes/pods, the kubelet's fine-grained
// authorization, GA in Kubernetes 1.36). Its markers live here, not in
// internal/nodeagent, whose markers would join the manager's role.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=nodes/pods,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifeline-node-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	var node, endpoint, healthAddr, kubeletURL, kubeletCA string
	var kubeletInsecure bool
	var settle time.Duration
	var metrics metricsauth.Options
	flag.StringVar(&node, "node-name", os.Getenv("NODE_NAME"), "The node whose pods the agent looks after (default $NODE_NAME).")
	flag.StringVar(&endpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock", "The node's container runtime (CRI) endpoint.")
	flag.StringVar(&kubeletURL, "kubelet-url", "", "The node's kubelet API (default: the node's InternalIP and the port its status gives).")
	flag.StringVar(&kubeletCA, "kubelet-ca", "", "CA bundle of the kubelet's serving certificate (default: the API server's CA).")
	flag.BoolVar(&kubeletInsecure, "kubelet-insecure-tls", false, "Do not verify the kubelet's serving certificate (a self-signed one).")
	flag.DurationVar(&settle, "kubelet-settle", 2*time.Second,
		"How long the kubelet must have had a pod's new labels and annotations before a container reading them is stopped (two PLEG relists: a pod worker mid-sync restarts containers from the copy it took before).")
	metrics.BindFlags(flag.CommandLine)
	flag.StringVar(&healthAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to; \"0\" disables them.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if node == "" {
		return fmt.Errorf("--node-name (or $NODE_NAME) is required")
	}

	ctx := ctrl.SetupSignalHandler()
	// The runtime first: an agent that cannot reach it says so and stops.
	cri, err := nodeagent.DialCRI(ctx, endpoint)
	if err != nil {
		return err
	}
	defer cri.Close()
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	if kubeletURL == "" {
		if kubeletURL, err = nodeagent.KubeletURL(ctx, restConfig, node); err != nil {
			return err
		}
	}
	kubelet, err := nodeagent.NewKubeletClient(restConfig, kubeletURL, kubeletCA, kubeletInsecure)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		// Only this node's pods, as a kubelet watches them.
		Cache: ctrlcache.Options{ByObject: map[client.Object]ctrlcache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", node)},
		}},
		Metrics:                metrics.Server(),
		HealthProbeBindAddress: healthAddr,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	events, err := recorder.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme())
	if err != nil {
		return err
	}
	if err := mgr.Add(events); err != nil {
		return err
	}
	agent := &nodeagent.Agent{Client: mgr.GetClient(), Runtime: cri, Kubelet: kubelet, Settle: &nodeagent.Settle{For: settle}, Recorder: events.For("node-agent")}
	if err := agent.SetupWithManager(mgr); err != nil {
		return err
	}
	ctrl.Log.WithName("node-agent").Info("starting", "node", node, "cri", endpoint)
	return mgr.Start(ctx)
}
