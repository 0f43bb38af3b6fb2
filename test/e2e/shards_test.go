package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// restartTests are the tests that stop, kill or replace the manager or the
// bridge. make test runs them in a test process of their own, on a cluster
// of its own (LIFELINE_E2E_SHARD=restarts), beside the rest
// (LIFELINE_E2E_SHARD=rest): each takes about half of the package's time
// (11-29, alone on 2 cores: 515 and 569 of 1,084 s), where the package in
// one process was make test's long pole. Without the variable, every test
// runs.
var restartTests = []string{
	"TestBridgeKeepsConsulInStep",
	"TestBridgeKeepsAnEtcdRegistryInStep",
	"TestBridgeRBACRuleRemoval",
	"TestCloneSetNeverOvershootsAcrossControllerRestarts",
	"TestCloneSetPreDeleteHookHoldsPodUntilReleased",
	"TestHookGuard",
	"TestImages",
	"TestInPlaceRolloutAcrossControllerRestarts",
	"TestLeaderFailoverMidRollout",
	"TestManagerOutageHoldsOnlyProtectedNamespaces",
	"TestPodUnavailableBudgetEvictionStorm",
	"TestRBACRuleRemoval",
	"TestWebhookCertificateRotation",
}

// selectShard narrows the run to shard's tests (go test's -run or -skip)
// and says how many real nodes its cluster needs: none of the restart
// tests runs a pod on one.
func selectShard(shard string) (realNodes int, err error) {
	if shard == "" {
		return 2, nil
	}
	if err := testsExist(restartTests); err != nil {
		return 0, err
	}
	names := "^(" + strings.Join(restartTests, "|") + ")$"
	switch shard {
	case "restarts":
		return 0, flag.Set("test.run", names)
	case "rest":
		return 2, flag.Set("test.skip", names)
	}
	return 0, fmt.Errorf("LIFELINE_E2E_SHARD=%q: want restarts or rest", shard)
}

// testsExist fails for a name no test of the package has: a renamed test
// would silently leave both shards.
func testsExist(names []string) error {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		return err
	}
	defined := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
	}
	for _, n := range names {
		if !defined[n] {
			return fmt.Errorf("shards_test.go names %s, which is no test of the package", n)
		}
	}
	return nil
}
