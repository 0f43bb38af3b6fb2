package e2e

import (
	"testing"

	"github.com/lifeline-k8s/lifeline/test/testenv"
)

// TestRevisionsOnTheClusterMatchOpenKruise: every set of the golden
// corpora, created through the API server and Lifeline's webhooks, gets
// the revision OpenKruise v1.9.0 names for it (test/migration holds
// OpenKruise's manager to the same vectors).
func TestRevisionsOnTheClusterMatchOpenKruise(t *testing.T) {
	testenv.CheckRevisions(t, &testenv.Kit{Cluster: local, K8s: k8s, Client: client})
}
