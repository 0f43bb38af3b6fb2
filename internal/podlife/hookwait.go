package podlife

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// hookStates are the states in which a pod waits for a hook operator.
var hookStates = map[pub.LifecycleStateType]bool{
	pub.LifecycleStatePreparingNormal: true,
	pub.LifecycleStatePreparingUpdate: true,
	pub.LifecycleStateUpdated:         true,
	pub.LifecycleStatePreparingDelete: true,
}

// WaitingOnHooks lists the pods that have waited on a hook for longer than
// limit, as "name (state)", and says when the next pod will
// cross the limit, so a user sees why a rollout or a deletion does not move.
func WaitingOnHooks(pods []*corev1.Pod, limit time.Duration, now time.Time) (stuck []string, next time.Duration) {
	if limit <= 0 {
		return nil, 0
	}
	for _, pod := range pods {
		state := podfacts.State(pod)
		since := podfacts.StateSince(pod)
		if !hookStates[state] || since.IsZero() {
			continue
		}
		waited := now.Sub(since)
		if waited > limit {
			stuck = append(stuck, fmt.Sprintf("%s (%s)", pod.Name, state))
		} else if left := limit - waited; next == 0 || left < next {
			next = left
		}
	}
	sort.Strings(stuck)
	return stuck, next
}

// StuckMessage is the event text for pods waiting on hooks.
func StuckMessage(stuck []string, limit time.Duration) string {
	const most = 5
	more := ""
	if len(stuck) > most {
		more = fmt.Sprintf(" and %d more", len(stuck)-most)
		stuck = stuck[:most]
	}
	return fmt.Sprintf("%s waited on a lifecycle hook for longer than %s%s; the hook operator has not released them",
		strings.Join(stuck, ", "), limit, more)
}

// HookWarning is the last LifecycleHookWaiting Warning posted for a
// workload: when, and the pods it named (WaitingOnHooks' entries).
type HookWarning struct {
	At    time.Time
	Named map[string]bool
}

// HookWarningDue decides whether to warn of stuck (WaitingOnHooks' pods
// past the limit) now, after last: at once when a pod is stuck that last
// did not name, otherwise again once limit has passed since last, and
// says when a repeat falls due (0: none pending). Not at every reconcile:
// a workload with a held pod is planned again at each change of any of
// its pods, and posted a Warning each time (11 a second while the
// namespace of a CloneSet with a held pod terminated, e2e of 11-29).
func HookWarningDue(stuck []string, last HookWarning, limit time.Duration, now time.Time) (due bool, again time.Duration) {
	if len(stuck) == 0 || limit <= 0 {
		return false, 0
	}
	for _, s := range stuck {
		if !last.Named[s] {
			return true, limit
		}
	}
	if left := last.At.Add(limit).Sub(now); left > 0 {
		return false, left
	}
	return true, limit
}
