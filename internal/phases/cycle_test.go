package phases

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

// fake records the phases run and fails the ones it is told to.
type fake struct {
	calls                   []string
	states                  bool // the step moves a pod to another lifecycle state
	revisions, plan, tidy   error
	status                  []error       // per WriteStatus call
	statusWait              time.Duration // a routine write's wait
	execute                 error
	executeAfter, tidyAfter time.Duration
}

func (f *fake) Revisions(context.Context) error {
	f.calls = append(f.calls, "revisions")
	return f.revisions
}
func (f *fake) Plan() ([]podlife.Action, error) {
	f.calls = append(f.calls, "plan")
	if f.states {
		return []podlife.Action{podlife.DeletePod{}, podlife.SetState{}}, f.plan
	}
	return []podlife.Action{podlife.CreatePod{}, podlife.DeletePod{}, podlife.UpdateInPlace{}}, f.plan
}

// WriteStatus records a routine write as "status*".
func (f *fake) WriteStatus(_ context.Context, routine bool) (time.Duration, error) {
	call, wait := "status", time.Duration(0)
	if routine {
		call, wait = "status*", f.statusWait
	}
	f.calls = append(f.calls, call)
	n := len(slices.DeleteFunc(slices.Clone(f.calls), func(c string) bool { return !strings.HasPrefix(c, "status") }))
	if n <= len(f.status) {
		return 0, f.status[n-1]
	}
	return wait, nil
}
func (f *fake) Execute(context.Context) (time.Duration, error) {
	f.calls = append(f.calls, "execute")
	return f.executeAfter, f.execute
}
func (f *fake) Tidy(context.Context) (time.Duration, error) {
	f.calls = append(f.calls, "tidy")
	return f.tidyAfter, f.tidy
}

var conflict = apierrors.NewConflict(schema.GroupResource{Resource: "clonesets"}, "web", errors.New("changed"))

// The phases in their order for every kind: the status before the step's
// pod writes when the step moves a pod's lifecycle state (and checked
// again after), else once after them; only the write after them is
// routine (status*: counts alone may wait); every failure stops where it
// must, and the wishes to look again merge to the soonest.
func TestRun(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		f       fake
		calls   string
		requeue bool
		after   time.Duration
		err     string
	}{
		{"a step that moves a pod's state", fake{states: true, executeAfter: 3 * time.Second, tidyAfter: 2 * time.Second}, "revisions plan status execute status* tidy", false, 2 * time.Second, ""},
		{"any other step: the status once, after", fake{executeAfter: time.Second}, "revisions plan execute status* tidy", false, time.Second, ""},
		{"counts that wait: looked at again when written", fake{executeAfter: 3 * time.Second, statusWait: 400 * time.Millisecond}, "revisions plan execute status* tidy", false, 400 * time.Millisecond, ""},
		{"revisions fail: nothing else", fake{revisions: boom}, "revisions", false, 0, "boom"},
		{"the plan fails: its status written, nothing executed", fake{plan: boom, tidyAfter: time.Second}, "revisions plan status tidy", false, time.Second, "boom"},
		{"the status conflicts: no step on a changed workload", fake{states: true, status: []error{conflict}}, "revisions plan status", true, 0, ""},
		{"the status fails", fake{states: true, status: []error{boom}}, "revisions plan status", false, 0, "boom"},
		{"the step fails: its outcome written, tidied", fake{execute: boom}, "revisions plan execute status* tidy", false, 0, "boom"},
		{"the status after conflicts", fake{states: true, status: []error{nil, conflict}, execute: boom}, "revisions plan status execute status*", true, 0, "boom"},
		{"tidy fails", fake{tidy: boom}, "revisions plan execute status* tidy", false, 0, "boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			res, err := Run(context.Background(), &f)
			if got := strings.Join(f.calls, " "); got != c.calls {
				t.Errorf("phases %q, want %q", got, c.calls)
			}
			if res.Requeue != c.requeue || res.RequeueAfter != c.after {
				t.Errorf("result %+v, want requeue %v after %v", res, c.requeue, c.after)
			}
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}
