package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

func template(image string, env ...corev1.EnvVar) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image, Env: env}, {Name: "side", Image: "envoy:1"}}},
	}
}

func TestInPlaceUpdateFlow(t *testing.T) {
	cs := cloneSet(2, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	s := snapshot(cs, readyPod("a", oldRev), readyPod("b", oldRev))
	s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
	p, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 1 || !is[podlife.UpdateInPlace](p.Actions[0]) || images(p.Actions[0])["main"] != "nginx:2" {
		t.Fatalf("actions %+v", p.Actions)
	}

	// An env change falls back to recreation; InPlaceOnly refuses it.
	s.Templates[newRev] = template("nginx:2", corev1.EnvVar{Name: "A", Value: "1"})
	if p, _ := Compute(s); len(p.Actions) != 1 || !is[podlife.DeletePod](p.Actions[0]) {
		t.Fatalf("InPlaceIfPossible with an env change: %+v", p.Actions)
	}
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
	if _, err := Compute(s); err == nil {
		t.Fatal("InPlaceOnly accepted an env change")
	}

	// An inPlaceUpdate hook holds the pod in PreparingUpdate.
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	s.Templates[newRev] = template("nginx:2")
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	hold, gated := func(p *corev1.Pod) { p.Labels["hold"] = "true" }, withGate(pub.KruisePodReadyConditionType, corev1.ConditionTrue)
	s.Pods = []*corev1.Pod{readyPod("a", oldRev, hold, gated), readyPod("b", oldRev, hold, gated)}
	if p, _ := Compute(s); len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStatePreparingUpdate || !addsNotReady(p.Actions[0], pub.PodReadyKeyPreUpdateHook) {
		t.Fatalf("hooked: %+v", p.Actions)
	}
}

func TestInPlaceCompletion(t *testing.T) {
	cs := cloneSet(1, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	updating := readyPod("a", newRev, inState(pub.LifecycleStateUpdating), withGate(pub.InPlaceUpdateReady, corev1.ConditionFalse), func(p *corev1.Pod) {
		p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"` + newRev + `","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"old-id"}}}`}
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx:2"}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "nginx:1", ImageID: "old-id"}}
	})
	s := snapshot(cs, updating)
	if p, _ := Compute(s); len(p.Actions) != 0 {
		t.Fatalf("moved on before the container runs the new image: %+v", p.Actions)
	}
	updating.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "main", Image: "nginx:2", ImageID: "new-id"}
	p, _ := Compute(s)
	if c, _ := condition(p.Actions[0], pub.InPlaceUpdateReady); len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStateNormal || c.Status != corev1.ConditionTrue {
		t.Fatalf("done: %+v", p.Actions)
	}
	// With an inPlaceUpdate hook whose handlers are not back, Updated.
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	if p, _ := Compute(s); len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStateUpdated {
		t.Fatalf("done, hook not back: %+v", p.Actions)
	}
}

func TestRollbackReleasesAHeldPod(t *testing.T) {
	cs := cloneSet(1, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, MarkPodNotReady: true}}
	// Held for an update to newRev, then the spec went back: the pod's
	// own revision is the update revision again.
	held := readyPod("a", newRev, inState(pub.LifecycleStatePreparingUpdate), withGate(pub.KruisePodReadyConditionType, corev1.ConditionFalse), func(p *corev1.Pod) {
		p.Labels["hold"] = "true"
		p.Status.Conditions[1].Message = `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`
	})
	p, _ := Compute(snapshot(cs, held))
	if len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStateNormal || !liftsNotReady(p.Actions[0], pub.PodReadyKeyPreUpdateHook) {
		t.Fatalf("actions %+v", p.Actions)
	}
}

func TestGracePeriod(t *testing.T) {
	cs := cloneSet(2, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: 10}
	s := snapshot(cs, readyPod("a", oldRev), readyPod("b", oldRev))
	s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
	if p, _ := Compute(s); len(p.Actions) != 1 || !strings.Contains(writesOf(p.Actions[0])[0].Annotations[pub.InPlaceUpdateGraceKey], `"graceSeconds":10`) || len(writesOf(p.Actions[0])[0].Images) != 0 {
		t.Fatalf("actions %+v", p.Actions)
	}
	// Mid grace: nothing to do but wait; after it, the images go in.
	waiting := readyPod("a", newRev, inState(pub.LifecycleStateUpdating), func(p *corev1.Pod) {
		p.Annotations = map[string]string{
			pub.InPlaceUpdateGraceKey: `{"revision":"` + newRev + `","containerImages":{"main":"nginx:2"},"graceSeconds":10}`,
			pub.InPlaceUpdateStateKey: `{"revision":"` + newRev + `","updateTimestamp":"` + now.Add(-4*time.Second).Format(time.RFC3339) + `","lastContainerStatuses":{"main":{"imageID":"x"}}}`,
		}
	})
	s = snapshot(cs, waiting, readyPod("b", newRev))
	p, _ := Compute(s)
	if len(p.Actions) != 0 || p.RequeueAfter < 6*time.Second || p.RequeueAfter > 7*time.Second {
		t.Fatalf("mid grace: actions %+v, requeue %v", p.Actions, p.RequeueAfter)
	}
	s.Now = now.Add(7 * time.Second)
	if p, _ := Compute(s); len(p.Actions) != 1 || !is[podlife.FinishGrace](p.Actions[0]) {
		t.Fatalf("after grace: %+v", p.Actions)
	}
}

func TestNewerRevisionRehooksAnUpdatedPod(t *testing.T) {
	cs := cloneSet(1, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	hook := &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}, FinalizersHandler: []string{"example.com/f"}}
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: hook}
	// Updated to oldRev, handlers not back yet, and now newRev arrives.
	s := snapshot(cs, readyPod("a", oldRev, inState(pub.LifecycleStateUpdated)))
	s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
	p, _ := Compute(s)
	if len(p.Actions) != 1 || stateOf(p.Actions[0]) != pub.LifecycleStatePreparingUpdate || writesOf(p.Actions[0])[0].Labels["hold"] != "true" ||
		!slices.Equal(writesOf(p.Actions[0])[0].AddFinalizers, hook.FinalizersHandler) {
		t.Fatalf("actions %+v", p.Actions)
	}
}

// An in-place update interrupted between its two writes (the controller
// stopped after InPlaceUpdateReady went False) leaves a pod NotReady that is
// not being updated. Once it is not picked again (here: rolled back to its
// revision), the condition goes back to True; a pod mid-update keeps it.
func TestInterruptedInPlaceUpdateIsRepaired(t *testing.T) {
	cs := cloneSet(2, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	gateFalse := func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
	}
	stranded := readyPod("a", newRev, gateFalse)
	updating := readyPod("b", newRev, gateFalse, inState(pub.LifecycleStateUpdating))
	s := snapshot(cs, stranded, updating)
	s.Templates = map[string]*corev1.PodTemplateSpec{newRev: template("nginx:2")}
	p, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	var repairs []string
	for _, a := range p.Actions {
		if is[podlife.InitPodReady](a) {
			if types := conditionTypes(a); len(types) != 1 || types[0] != pub.InPlaceUpdateReady {
				t.Errorf("repair of %s sets %v", a.Target().Name, types)
			}
			repairs = append(repairs, a.Target().Name)
		}
	}
	if len(repairs) != 1 || repairs[0] != stranded.Name {
		t.Errorf("repaired %v, want only the stranded pod %s", repairs, stranded.Name)
	}
}

func prioritized(name, image string, priority string) corev1.Container {
	c := corev1.Container{Name: name, Image: image}
	if priority != "" {
		c.Env = []corev1.EnvVar{{Name: podlife.ContainerPriorityEnv, Value: priority}}
	}
	return c
}

// OpenKruise's e2e 13 and 14: redis (priority 10) is updated first; nginx
// only once redis runs its new image and is Ready, never if it does not.
func TestInPlaceUpdateByContainerPriority(t *testing.T) {
	cs := cloneSet(1, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	tmpl := func(redis, nginx string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{prioritized("nginx", nginx, ""), prioritized("redis", redis, "10")}}}
	}
	old, upd := tmpl("redis:1", "nginx:1"), tmpl("redis:2", "nginx:2")
	pod := readyPod("a", oldRev, func(p *corev1.Pod) {
		p.Spec.Containers = old.DeepCopy().Spec.Containers
		p.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "nginx", Image: "nginx:1", ImageID: "id-nginx:1", Ready: true},
			{Name: "redis", Image: "redis:1", ImageID: "id-redis:1", Ready: true},
		}
	})
	s := snapshot(cs, pod)
	s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: old, newRev: upd}
	p, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 1 || !is[podlife.UpdateInPlace](p.Actions[0]) {
		t.Fatalf("actions %+v", p.Actions)
	}
	if im, st := images(p.Actions[0]), inPlaceState(t, p.Actions[0]); len(im) != 1 || im["redis"] != "redis:2" || st.NextContainerImages["nginx"] != "nginx:2" {
		t.Fatalf("first batch %v, next %v", im, st.NextContainerImages)
	}

	// What the controller wrote: redis's new image, nginx waiting.
	updating := func(redisStatus corev1.ContainerStatus) *corev1.Pod {
		return readyPod("a", newRev, inState(pub.LifecycleStateUpdating), func(p *corev1.Pod) {
			p.Spec.Containers = upd.DeepCopy().Spec.Containers
			p.Spec.Containers[0].Image = "nginx:1"
			p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"` + newRev + `","updateTimestamp":null,` +
				`"lastContainerStatuses":{"redis":{"imageID":"id-redis:1"}},"nextContainerImages":{"nginx":"nginx:2"},` +
				`"preCheckBeforeNext":{"containersRequiredReady":["redis"]},"containerBatchesRecord":[{"timestamp":null,"containers":["redis"]}]}`}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", Image: "nginx:1", ImageID: "id-nginx:1", Ready: true}, redisStatus}
		})
	}
	for _, c := range []struct {
		name  string
		redis corev1.ContainerStatus
		next  bool
	}{
		{"redis not restarted yet", corev1.ContainerStatus{Name: "redis", Image: "redis:1", ImageID: "id-redis:1", Ready: true}, false},
		{"redis on its new image but not Ready", corev1.ContainerStatus{Name: "redis", Image: "redis:2", ImageID: "id-redis:2"}, false},
		{"redis on its new image and Ready", corev1.ContainerStatus{Name: "redis", Image: "redis:2", ImageID: "id-redis:2", Ready: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := snapshot(cs, updating(c.redis))
			s.CurrentRevision = newRev
			s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: old, newRev: upd}
			p, err := Compute(s)
			if err != nil {
				t.Fatal(err)
			}
			var got []podlife.Action
			for _, a := range p.Actions {
				if is[podlife.UpdateNextBatch](a) || is[podlife.SetState](a) {
					got = append(got, a)
				}
			}
			switch {
			case !c.next && len(got) > 0:
				t.Errorf("acted before redis was updated and Ready: %s %+v", got[0].Kind(), writesOf(got[0]))
			case c.next && (len(got) != 1 || !is[podlife.UpdateNextBatch](got[0]) || images(got[0])["nginx"] != "nginx:2" || len(inPlaceState(t, got[0]).NextContainerImages) != 0):
				t.Errorf("next batch: %+v", got)
			}
		})
	}
	if pod := updating(corev1.ContainerStatus{Name: "redis", Image: "redis:2", ImageID: "id-redis:2", Ready: true}); podfacts.InPlaceUpdateDone(pod) {
		t.Error("done with a batch still waiting")
	}
}

func TestCompletionComparesUntaggedImagesAsLatest(t *testing.T) {
	pod := readyPod("a", newRev, func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx"}}
		p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"x","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"same"}}}`}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "nginx:latest", ImageID: "same"}}
	})
	if !podfacts.InPlaceUpdateDone(pod) {
		t.Error(`"nginx" running as "nginx:latest" with an unchanged imageID is not done`)
	}
}

// A pod its preNormal hook still holds is not updated in place, nor moved
// to PreparingUpdate: it would leave Updating for Normal without its
// handler (OpenKruise's edge, fixed). Once released it goes Normal first.
func TestHeldPreparingNormalPodIsNotUpdatedInPlace(t *testing.T) {
	cs := cloneSet(1, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	const registered = "example.com/registered"
	cs.Spec.Lifecycle = &pub.Lifecycle{
		PreNormal:     &pub.LifecycleHook{LabelsHandler: map[string]string{registered: "true"}},
		InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/other": "true"}},
	}
	held := readyPod("a", oldRev, inState(pub.LifecycleStatePreparingNormal), func(p *corev1.Pod) { p.Labels["example.com/other"] = "true" })
	s := snapshot(cs, held)
	s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
	p, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 0 {
		t.Fatalf("acted on a pod its preNormal hook holds: %s to %s", p.Actions[0].Kind(), stateOf(p.Actions[0]))
	}
	held.Labels[registered] = "true"
	p, _ = Compute(s)
	if len(p.Actions) != 1 || !is[podlife.SetState](p.Actions[0]) || stateOf(p.Actions[0]) != pub.LifecycleStateNormal {
		t.Fatalf("released: %+v", p.Actions)
	}
}

// OpenKruise's volumeClaimTemplates matrix (reference §3.9, its e2e runs
// with RecreatePodWhenChangeVCTInCloneSetGate on).
func TestClaimTemplateChangeRecreatesInPlaceIfPossible(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy appsv1alpha1.CloneSetUpdateStrategyType
		gate     bool
		hashes   map[string]string
		want     string
	}{
		{"image and templates changed: recreated", appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, true, map[string]string{oldRev: "1", newRev: "2"}, "DeletePod"},
		{"image changed, templates the same: in place", appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, true, map[string]string{oldRev: "1", newRev: "1"}, "UpdateInPlace"},
		{"InPlaceOnly ignores the templates", appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType, true, map[string]string{oldRev: "1", newRev: "2"}, "UpdateInPlace"},
		{"a revision without a recorded hash: in place", appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, true, map[string]string{newRev: "2"}, "UpdateInPlace"},
		{"off by default, as in OpenKruise: in place", appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, false, map[string]string{oldRev: "1", newRev: "2"}, "UpdateInPlace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := cloneSet(1, "", "1", "")
			cs.Spec.UpdateStrategy.Type = tc.strategy
			s := snapshot(cs, readyPod("a", oldRev))
			s.Templates = map[string]*corev1.PodTemplateSpec{oldRev: template("nginx:1"), newRev: template("nginx:2")}
			s.ClaimTemplateHashes, s.RecreatePodsWhenVCTChanges = tc.hashes, tc.gate
			p, err := Compute(s)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) != 1 || p.Actions[0].Kind() != tc.want {
				t.Errorf("actions %+v, want one %s", p.Actions, tc.want)
			}
		})
	}
}

// A newer revision that arrives while a pod is still Updating waits for
// that update to finish, even when the operator already put the
// inPlaceUpdate handlers back: Updating → PreparingUpdate is no move of the
// state machine. (The lifecycle model found this once its operator acted
// on Updating pods too.)
func TestUpdatingPodWaitsForItsUpdateBeforeTheNext(t *testing.T) {
	cs := cloneSet(1, "", "1", "")
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	const midRev = "web-midhash3"
	updating := readyPod("a", midRev, inState(pub.LifecycleStateUpdating), func(p *corev1.Pod) {
		p.Labels["hold"] = "true"
		p.Annotations = map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"` + midRev + `","updateTimestamp":null,"lastContainerStatuses":{"main":{"imageID":"old-id"}}}`}
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "nginx:2"}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "nginx:1", ImageID: "old-id"}}
	})
	s := snapshot(cs, updating)
	s.Templates = map[string]*corev1.PodTemplateSpec{midRev: template("nginx:2"), newRev: template("nginx:3")}
	p, err := Compute(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 0 {
		t.Fatalf("acted on a pod mid-update: %v", names(p.Actions))
	}
}
