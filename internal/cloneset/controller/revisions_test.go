package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/phases"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// revisionTestbed is a Reconciler on a fake client, for the revision
// history logic alone.
func revisionTestbed(t *testing.T, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&appsv1.ControllerRevision{}, ownerindex.Field, ownerindex.ControllerUID).Build()
	return &Reconciler{Shell: phases.Shell{Client: c, APIReader: c}}, c
}

func revisionCloneSet(image string) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "cs-uid"}}
	cs.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
	return cs
}

func storedRevisions(t *testing.T, c client.Client) map[string]*appsv1.ControllerRevision {
	t.Helper()
	list := &appsv1.ControllerRevisionList{}
	if err := c.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*appsv1.ControllerRevision{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// A template change makes a new revision; going back to an earlier
// template reuses its revision, renumbered as the newest, so the pods still
// at it keep their revision and are not rolled.
func TestRevisionsAreReusedOnRollback(t *testing.T) {
	ctx := context.Background()
	r, c := revisionTestbed(t)
	v1 := revisionCloneSet("nginx:1")
	revs, err := r.syncRevisions(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	first := revs.Update.Name
	if revs.Update.Revision != 1 || revs.Current.Name != first {
		t.Fatalf("first revision %s number %d, current %s", first, revs.Update.Revision, revs.Current.Name)
	}

	v2 := revisionCloneSet("nginx:2")
	v2.Status.CurrentRevision = first
	if revs, err = r.syncRevisions(ctx, v2); err != nil {
		t.Fatal(err)
	}
	second := revs.Update.Name
	if second == first || revs.Update.Revision != 2 || revs.Current.Name != first {
		t.Fatalf("after a change: update %s (number %d), current %s", second, revs.Update.Revision, revs.Current.Name)
	}

	back := revisionCloneSet("nginx:1")
	back.Status.CurrentRevision = first
	back.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	if revs, err = r.syncRevisions(ctx, back); err != nil {
		t.Fatal(err)
	}
	stored := storedRevisions(t, c)
	if revs.Update.Name != first || len(stored) != 2 || stored[first].Revision != 3 {
		t.Fatalf("rollback: update %s, %d revisions stored, %s numbered %d", revs.Update.Name, len(stored), first, stored[first].Revision)
	}
	if got, want := stored[first].Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation], revision.ClaimTemplatesHash(back.Spec.VolumeClaimTemplates); got != want || want == "" {
		t.Errorf("the reused revision records claim templates %q, want today's %q", got, want)
	}

	// The latest revision again: nothing written.
	before := stored[first].ResourceVersion
	if revs, err = r.syncRevisions(ctx, back); err != nil || revs.Update.Name != first {
		t.Fatalf("same template again: %v %v", revs.Update.Name, err)
	}
	if storedRevisions(t, c)[first].ResourceVersion != before {
		t.Error("the latest revision was rewritten though nothing changed")
	}
}

// A revision name taken by other data is a hash collision: the collision
// count goes up and the name changes; the same data under that name is a
// revision made earlier, reused.
func TestRevisionNameCollision(t *testing.T) {
	ctx := context.Background()
	cs := revisionCloneSet("nginx:1")
	mine, err := revision.New(cs, ptr.To[int32](0), 1)
	if err != nil {
		t.Fatal(err)
	}
	squatter := mine.DeepCopy()
	squatter.Data.Raw = []byte(`{"spec":{"template":{"other":true}}}`)
	r, _ := revisionTestbed(t, squatter)
	revs, err := r.syncRevisions(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if revs.CollisionCount != 1 || revs.Update.Name == mine.Name {
		t.Fatalf("collision: count %d, name %s (taken: %s)", revs.CollisionCount, revs.Update.Name, mine.Name)
	}

	// Made by an earlier reconcile the cache has not shown: reused.
	r, _ = revisionTestbed(t)
	planned := func() *appsv1.ControllerRevision {
		cr, err := revision.New(cs, ptr.To[int32](0), 1)
		if err != nil {
			t.Fatal(err)
		}
		return cr
	}
	if _, err := r.RevisionStore().Create(ctx, revision.CloneSetSource(cs), planned(), ptr.To[int32](0)); err != nil {
		t.Fatal(err)
	}
	count := int32(0)
	again, err := r.RevisionStore().Create(ctx, revision.CloneSetSource(cs), planned(), &count)
	if err != nil || again.Name != mine.Name || count != 0 {
		t.Fatalf("recreating an existing revision: %v name %s count %d", err, again.Name, count)
	}
}

// The history keeps revisionHistoryLimit unused revisions (10 when
// unset), the oldest going first, and never one in use.
func TestRevisionHistoryLimit(t *testing.T) {
	ctx := context.Background()
	r, c := revisionTestbed(t)
	images := []string{"a", "b", "c", "d", "e", "f"}
	var names []string
	for i, image := range images {
		cs := revisionCloneSet(image)
		if i > 0 {
			cs.Status.CurrentRevision = names[0]
		}
		revs, err := r.syncRevisions(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, revs.Update.Name)
	}
	cs := revisionCloneSet("f")
	cs.Status.CurrentRevision = names[0]
	cs.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	revs, err := r.syncRevisions(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	// A pod still at "c" keeps it.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: names[2]}}}
	if err := r.RevisionStore().Truncate(ctx, revs, []*corev1.Pod{pod}, historyLimit(cs)); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for name := range storedRevisions(t, c) {
		kept = append(kept, name)
	}
	slices.Sort(kept)
	// current (a), update (f), in use (c), and the newest unused one (e).
	want := []string{names[0], names[2], names[4], names[5]}
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}

	// Unset, the limit is the default: of twelve revisions, the one in
	// use and the ten newest unused ones stay.
	r, c = revisionTestbed(t)
	var last string
	for i := 0; i < 12; i++ {
		last = fmt.Sprintf("image-%d", i)
		if _, err := r.syncRevisions(ctx, revisionCloneSet(last)); err != nil {
			t.Fatal(err)
		}
	}
	cs = revisionCloneSet(last)
	if revs, err = r.syncRevisions(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if err := r.RevisionStore().Truncate(ctx, revs, nil, historyLimit(cs)); err != nil {
		t.Fatal(err)
	}
	if n := len(storedRevisions(t, c)); n != appsv1alpha1.DefaultCloneSetRevisionHistoryLimit+1 {
		t.Errorf("%d of 12 revisions kept, want the one in use and %d more", n, appsv1alpha1.DefaultCloneSetRevisionHistoryLimit)
	}
}

// syncRevisions reads, plans and writes revisions as a reconcile does.
func (r *Reconciler) syncRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet) (*revisions, error) {
	existing, err := r.RevisionStore().List(ctx, cs.Namespace, string(cs.UID))
	if err != nil {
		return nil, err
	}
	revs, err := planner.PlanRevisions(cs, existing)
	if err != nil {
		return nil, err
	}
	return &revs, r.writeRevisions(ctx, cs, &revs)
}
