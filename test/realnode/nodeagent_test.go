package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// envFromLabel runs a CloneSet whose container reads label color from its
// env, changes the label in place, and waits for the chart's node agent
// to have restarted the container once, with the new value (its report,
// read from the runtime), and the pod Normal and Ready.
func envFromLabel(t *testing.T, cc *chartCluster) {
	const ns = "envmeta"
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: envmeta, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: envmeta}}
  updateStrategy: {type: InPlaceIfPossible}
  template:
    metadata: {labels: {app: envmeta, color: blue}}
    spec:
      nodeSelector: {%[2]s: "true"}
      tolerations: [{key: %[3]s, operator: Equal, value: %[4]q, effect: %[5]s}]
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: %[6]s
        imagePullPolicy: Never
        env: [{name: COLOR, valueFrom: {fieldRef: {fieldPath: "metadata.labels['color']"}}}]
`, ns, cluster.RealNodeLabel, cluster.RealNodeTaint.Key, cluster.RealNodeTaint.Value, cluster.RealNodeTaint.Effect, cluster.TestAppImage("v1"))
	path := filepath.Join(t.TempDir(), "envmeta.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := cc.Binaries["kubectl"]
	cc.run(t, "apply the CloneSet", kubectl, "apply", "-f", path)
	pod := waitEnvPod(t, cc, "reported blue", 0, "blue")
	cc.run(t, "change the label", kubectl, "-n", ns, "patch", "clone", "envmeta", "--type=merge",
		"-p", `{"spec":{"template":{"metadata":{"labels":{"color":"green"}}}}}`)
	after := waitEnvPod(t, cc, "restarted once with green", 1, "green")
	if after.UID != pod.UID {
		t.Error("the pod was recreated")
	}
}

// waitEnvPod waits for the envmeta pod to be Normal and Ready after
// restarts restarts, its app container reported running with color.
func waitEnvPod(t *testing.T, cc *chartCluster, what string, restarts int32, color string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, 2*time.Minute, "the envmeta pod "+what, func(ctx context.Context) (bool, string) {
		pods, err := cc.client.CoreV1().Pods("envmeta").List(ctx, metav1.ListOptions{LabelSelector: "app=envmeta"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprint(len(pods.Items), err)
		}
		p := &pods.Items[0]
		pod = p
		report := podfacts.RuntimeContainerMeta(p)
		raw, _ := json.Marshal(report)
		if len(p.Status.ContainerStatuses) != 1 || report == nil || len(report.Containers) != 1 {
			return false, fmt.Sprintf("statuses %+v, report %s", p.Status.ContainerStatuses, raw)
		}
		st, r := p.Status.ContainerStatuses[0], report.Containers[0]
		ok := st.Ready && st.RestartCount == restarts && r.ContainerID == st.ContainerID &&
			r.Hashes.ExtractedEnvFromMetadataHash == podfacts.EnvHash(map[string]string{"COLOR": color}) &&
			p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal)
		return ok, fmt.Sprintf("state %s, container %+v, report %s", p.Labels[pub.LifecycleStateKey], st, raw)
	})
	return pod
}
