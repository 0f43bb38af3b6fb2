package podlife

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

func TestCanUpdateInPlace(t *testing.T) {
	if c, ok := CanUpdateInPlace(template("nginx:1"), template("nginx:2")); !ok || c.Images["main"] != "nginx:2" || len(c.Images) != 1 {
		t.Errorf("image change: %+v %v", c, ok)
	}
	relabelled := template("nginx:1")
	relabelled.Labels = map[string]string{"app": "web", "tier": "x"}
	relabelled.Annotations = map[string]string{"a": "b"}
	if c, ok := CanUpdateInPlace(template("nginx:1"), relabelled); !ok || c.Labels["tier"] != "x" || c.Annotations["a"] != "b" || len(c.Labels) != 1 {
		t.Errorf("metadata change: %+v %v", c, ok)
	}
	if c, ok := CanUpdateInPlace(relabelled, template("nginx:1")); !ok || len(c.RemovedAnnotations) != 1 || len(c.RemovedLabels) != 1 {
		t.Errorf("metadata removal: %+v %v", c, ok)
	}
	if _, ok := CanUpdateInPlace(template("nginx:1"), template("nginx:2", corev1.EnvVar{Name: "A", Value: "1"})); ok {
		t.Error("an env change can be made in place")
	}
}

func TestSplitBatch(t *testing.T) {
	containers := []corev1.Container{prioritized("app", "a:1", "5"), prioritized("log", "l:1", ""), prioritized("proxy", "p:1", "10")}
	all := map[string]string{"app": "a:2", "log": "l:2", "proxy": "p:2"}
	for _, c := range []struct {
		name      string
		images    map[string]string
		now, next []string
	}{
		{"highest priority first; none counts as 0", all, []string{"proxy"}, []string{"app", "log"}},
		{"only what changed counts", map[string]string{"app": "a:2", "log": "l:2"}, []string{"app"}, []string{"log"}},
		{"equal priorities together", map[string]string{"log": "l:2"}, []string{"log"}, nil},
		{"one container", map[string]string{"app": "a:2"}, []string{"app"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			now, next := splitBatch(containers, c.images)
			if got := slices.Sorted(maps.Keys(now)); !slices.Equal(got, c.now) {
				t.Errorf("now %v, want %v", got, c.now)
			}
			if got := slices.Sorted(maps.Keys(next)); !slices.Equal(got, c.next) {
				t.Errorf("next %v, want %v", got, c.next)
			}
		})
	}
	if now, next := splitBatch([]corev1.Container{prioritized("a", "a:1", "x"), prioritized("b", "b:1", "")}, map[string]string{"a": "a:2", "b": "b:2"}); next != nil || len(now) != 2 {
		t.Error("an unreadable priority does not count as 0")
	}
}

func template(image string, env ...corev1.EnvVar) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image, Env: env}, {Name: "side", Image: "envoy:1"}}},
	}
}

func prioritized(name, image, priority string) corev1.Container {
	c := corev1.Container{Name: name, Image: image}
	if priority != "" {
		c.Env = []corev1.EnvVar{{Name: ContainerPriorityEnv, Value: priority}}
	}
	return c
}

// TestTheWriteApplyingImagesRestsOnTheContainersItRecords: the grace
// period's end records the container running now (the kubelet restarted
// the old one meanwhile, still on the old spec) and the rendered patch
// fails if the kubelet reports yet another before it lands; a container
// other than the recorded one would otherwise count the update done.
func TestTheWriteApplyingImagesRestsOnTheContainersItRecords(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{
		pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"sha256:one","containerID":"containerd://a"}}}`,
		pub.InPlaceUpdateGraceKey: `{"revision":"r2","containerImages":{"main":"app:v2"},"graceSeconds":5}`,
	}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "side", Image: "side:v1"}, {Name: "main", Image: "app:v1"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "side", ContainerID: "containerd://s"}, {Name: "main", ImageID: "sha256:one", ContainerID: "containerd://b"}}}}
	w, err := finishGraceWrite(pod)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.ExpectContainerIDs; len(got) != 1 || got["main"] != "containerd://b" {
		t.Errorf("the write rests on %v, want main's running container b", got)
	}
	if !strings.Contains(w.Annotations[pub.InPlaceUpdateStateKey], `"containerID":"containerd://b"`) {
		t.Errorf("record %s, want container b", w.Annotations[pub.InPlaceUpdateStateKey])
	}
	raw, err := w.Render(pod).Data()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"op":"test","path":"/status/containerStatuses/1/containerID","value":"containerd://b"}`; !strings.Contains(string(raw), want) {
		t.Errorf("patch %s lacks %s", raw, want)
	}
}

func TestTheRecordSaysWhenEnvReadsChangedMetadata(t *testing.T) {
	env := []corev1.EnvVar{{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1", Env: env}}}}
	for _, tc := range []struct {
		name   string
		change *InPlaceChange
		want   bool
	}{
		{"the label the env reads", &InPlaceChange{Labels: map[string]string{"color": "green"}}, true},
		{"the label the env reads, removed", &InPlaceChange{RemovedLabels: []string{"color"}}, true},
		{"another label", &InPlaceChange{Labels: map[string]string{"size": "xl"}, Images: map[string]string{"main": "app:v2"}}, false},
		{"an annotation of the same key", &InPlaceChange{Annotations: map[string]string{"color": "green"}}, false},
	} {
		writes, err := Life{}.inPlaceWrites(pod, "r2", tc.change)
		if err != nil {
			t.Fatal(err)
		}
		st := &pub.InPlaceUpdateState{}
		if err := json.Unmarshal([]byte(writes[len(writes)-1].Annotations[pub.InPlaceUpdateStateKey]), st); err != nil {
			t.Fatal(err)
		}
		if st.UpdateEnvFromMetadata != tc.want {
			t.Errorf("%s: updateEnvFromMetadata = %v, want %v", tc.name, st.UpdateEnvFromMetadata, tc.want)
		}
	}
}

func TestAnUpdateDoneWithoutAgentWarnsOfTheEnvKeptOld(t *testing.T) {
	env := []corev1.EnvVar{{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}
	pod := func(annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: annotations, Labels: map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStateUpdating)}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Env: env}, {Name: "side"}}}}
	}
	state := `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":{},"updateEnvFromMetadata":true}`
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		warn        bool
	}{
		{"no agent on the node", map[string]string{pub.InPlaceUpdateStateKey: state}, true},
		{"an agent reports", map[string]string{pub.InPlaceUpdateStateKey: state, pub.RuntimeContainerMetaKey: `{"containers":[]}`}, false},
		{"no env from the changed metadata", map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":{}}`}, false},
	} {
		a := (Life{}).SetState(pod(tc.annotations), Transition{To: pub.LifecycleStateNormal, InPlaceDone: true}, "done").(SetState)
		got := len(a.Warnings) == 1 && a.Warnings[0].Reason == "EnvFromMetadataNotRestarted" && strings.Contains(a.Warnings[0].Message, "containers main read")
		if got != tc.warn || len(a.Warnings) > 1 {
			t.Errorf("%s: warnings %+v, want the warning: %v", tc.name, a.Warnings, tc.warn)
		}
	}
}
