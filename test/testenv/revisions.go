package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
)

// Kit is what the revision checks need of a suite: its cluster, a client
// for the workload kinds and one for namespaces.
type Kit struct {
	Cluster *cluster.Cluster
	K8s     ctrlclient.Client
	Client  kubernetes.Interface
}

// CheckRevisions puts the corpora of the unit golden tests
// (internal/revision, internal/statefulset/webhook,
// internal/daemonset/webhook), which compare defaults and revision code
// with what OpenKruise v1.9.0's own code records, through what a user's
// manifest goes through on the cluster (the API server, its conversion
// between versions, the webhooks and the controller of whoever runs
// there), and compares the revisions the controller names with the
// recorded ones. test/e2e runs it against Lifeline, test/migration
// against OpenKruise's manager, so both sides of a swap are held to the
// same vectors: a set whose revision name differs rolls every pod.
func CheckRevisions(t *testing.T, k *Kit) {
	t.Run("CloneSet", func(t *testing.T) { cloneSetRevisions(t, k) })
	t.Run("StatefulSet", func(t *testing.T) { statefulSetRevisions(t, k) })
	t.Run("DaemonSet", func(t *testing.T) { daemonSetRevisions(t, k) })
}

func cloneSetRevisions(t *testing.T, k *Kit) {
	vectors := RevisionNames(t, "internal/revision/testdata/kruise-v1.9.0.json")
	ns := Namespace(t, k.Client)
	var sets []expected
	for _, cs := range decodeCorpus(t, "internal/revision/testdata/corpus.yaml", func() *appsv1alpha1.CloneSet { return &appsv1alpha1.CloneSet{} }) {
		cs.Namespace, cs.Spec.Replicas = ns, ptr.To[int32](0)
		other := &appsv1beta1.CloneSet{}
		sets = append(sets, k.createBoth(t, cs, other, vectors[cs.Name],
			func() string { return cs.Status.UpdateRevision }, func() string { return other.Status.UpdateRevision })...)
	}
	k.compare(t, sets)
}

func statefulSetRevisions(t *testing.T, k *Kit) {
	vectors := RevisionNames(t, "internal/statefulset/webhook/testdata/kruise-v1.9.0.json")
	ns := Namespace(t, k.Client)
	var sets []expected
	for _, sts := range decodeCorpus(t, "internal/statefulset/webhook/testdata/corpus.yaml", func() *appsv1beta1.StatefulSet { return &appsv1beta1.StatefulSet{} }) {
		sts.Namespace, sts.Spec.Replicas = ns, ptr.To[int32](0)
		other := &appsv1alpha1.StatefulSet{}
		sets = append(sets, k.createBoth(t, sts, other, vectors[sts.Name],
			func() string { return sts.Status.UpdateRevision }, func() string { return other.Status.UpdateRevision })...)
	}
	if len(sets) < 40 || !slices.ContainsFunc(sets, func(e expected) bool { return e.obj.GetName() == "host-network" }) {
		t.Fatalf("%d sets of the corpus admitted in both versions; host-network must be among them", len(sets))
	}
	k.compare(t, sets)
}

// expected is a set created on the cluster and the revision it must get.
type expected struct {
	obj      ctrlclient.Object
	want     string
	revision func() string
}

// createBoth creates obj and, converted into other (the kind's other
// version), a copy named after it, and returns what each must name:
// want, the revision name recorded for obj, and the copy the same hash.
// A set both validations reject (the corpora hold such) returns nothing.
func (k *Kit) createBoth(t *testing.T, obj, other ctrlclient.Object, want string, revision, otherRevision func() string) []expected {
	t.Helper()
	if err := conversion.Convert(obj, other); err != nil {
		t.Fatalf("%s: %v", obj.GetName(), err)
	}
	name := obj.GetName()
	other.SetName(name + "-v")
	var out []expected
	for _, e := range []expected{{obj, want, revision}, {other, other.GetName() + strings.TrimPrefix(want, name), otherRevision}} {
		if err := k.K8s.Create(context.Background(), e.obj); apierrors.IsInvalid(err) {
			continue
		} else if err != nil {
			t.Fatalf("%s: %v", e.obj.GetName(), err)
		}
		out = append(out, e)
	}
	return out
}

func (k *Kit) compare(t *testing.T, sets []expected) {
	t.Helper()
	for _, e := range sets {
		got := k.waitRevision(t, e.obj, e.revision)
		if got != e.want {
			t.Errorf("%T %s: revision %s, OpenKruise names it %s", e.obj, e.obj.GetName(), got, e.want)
		}
	}
}

// RevisionNames reads the revision names OpenKruise gave each set of a
// corpus (hack/kruisevectors), by set name; path is under the repository.
func RevisionNames(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := readRepoFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Name         string `json:"name"`
		RevisionName string `json:"revisionName"`
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, v := range vectors {
		names[v.Name] = v.RevisionName
	}
	return names
}

func decodeCorpus[T any](t *testing.T, path string, fresh func() *T) []*T {
	t.Helper()
	data, err := readRepoFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*T
	for {
		obj := fresh()
		if err := decoder.Decode(obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, obj)
	}
}

// waitRevision polls obj until the controller reports a revision, read by
// revision, and returns it.
func (k *Kit) waitRevision(t *testing.T, obj ctrlclient.Object, revision func() string) string {
	t.Helper()
	Eventually(t, k.Cluster, time.Minute, obj.GetName()+" reports its update revision", func(ctx context.Context) (bool, string, error) {
		if err := k.K8s.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error(), nil
		}
		return revision() != "", fmt.Sprintf("generation %d", obj.GetGeneration()), nil
	})
	return revision()
}

// daemonSetRevisions: every v1beta1 set of
// the corpus OpenKruise admits on create gets an update revision holding
// OpenKruise's revision data. The hash in its name is Kubernetes' dump of
// the Go template, which differs between k8s.io/api versions
// (revision.PodTemplateHash), so a migrated set's revisions are found by
// their data.
func daemonSetRevisions(t *testing.T, k *Kit) {
	raw, err := readRepoFile("internal/daemonset/webhook/testdata/kruise-v1.9.0.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Name         string `json:"name"`
		Code         int32  `json:"code"`
		RevisionData string `json:"revisionData"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	data := map[string]string{}
	for _, v := range vectors {
		if v.Code == 200 {
			data[v.Name] = v.RevisionData
		}
	}
	type admission struct {
		Name   string                 `json:"name"`
		Object *appsv1beta1.DaemonSet `json:"object"`
		Old    json.RawMessage        `json:"old"`
	}
	ns := Namespace(t, k.Client)
	var sets []*appsv1beta1.DaemonSet
	for _, c := range decodeCorpus(t, "internal/daemonset/webhook/testdata/corpus.yaml", func() *admission { return &admission{} }) {
		if c.Name == "" || data[c.Name] == "" || c.Old != nil || c.Object.APIVersion != appsv1beta1.GroupVersion.String() {
			continue
		}
		ds := c.Object
		// The hash is of the template only, so each case gets its own
		// name in one namespace.
		ds.Name, ds.Namespace = c.Name, ns
		// Lifeline refuses two sets OpenKruise admits, on purpose
		// (internal/daemonset/webhook's refusedByLifeline).
		if err := k.K8s.Create(context.Background(), ds); apierrors.IsInvalid(err) {
			continue
		} else if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		sets = append(sets, ds)
	}
	if len(sets) < 5 || !slices.ContainsFunc(sets, func(s *appsv1beta1.DaemonSet) bool { return s.Name == "b-host-network" }) {
		t.Fatalf("%d sets of the corpus admitted; b-host-network must be among them", len(sets))
	}
	for _, ds := range sets {
		hash := k.waitRevision(t, ds, func() string { return ds.Status.UpdateRevision })
		var revisions appsv1.ControllerRevisionList
		if err := k.K8s.List(context.Background(), &revisions, ctrlclient.InNamespace(ns),
			ctrlclient.MatchingLabels{appsv1.ControllerRevisionHashLabelKey: hash}); err != nil {
			t.Fatal(err)
		}
		idx := slices.IndexFunc(revisions.Items, func(cr appsv1.ControllerRevision) bool { return metav1.IsControlledBy(&cr, ds) })
		if idx < 0 {
			t.Errorf("DaemonSet %s: no revision of hash %s", ds.Name, hash)
			continue
		}
		var got, want any
		if err := json.Unmarshal(revisions.Items[idx].Data.Raw, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(data[ds.Name]), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("DaemonSet %s: revision data\n%s\nOpenKruise's\n%s", ds.Name, revisions.Items[idx].Data.Raw, data[ds.Name])
		}
	}
}

func readRepoFile(path string) ([]byte, error) {
	root, err := binaries.RepoRoot()
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(root, path))
}
