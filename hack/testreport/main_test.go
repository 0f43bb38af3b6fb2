package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportListsStepsAndTheSlowestTopLevelTests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("steps", "vet 12 ok\ntest-main 1500 FAILED\n")
	// 2 cores: vet keeps both busy, test-main one of them.
	write("cpu", `vet start cpu  100 0 100 800 0 0 0 0 0 0
vet end cpu  1300 0 100 800 0 0 0 0 0 0
test-main start cpu  1300 0 100 800 0 0 0 0 0 0
test-main end cpu  151300 0 100 150800 0 0 0 0 0 0
`)
	write("build-cluster.log", "building etcd (go.etcd.io/etcd/server/v3 v3.6.8; group 1 of 1; first time only)\nbuilt etcd in 1m2s\n")
	write("test-main.json", `{"Action":"run","Package":"github.com/lifeline-k8s/lifeline/test/e2e","Test":"TestA"}
{"Action":"pass","Package":"github.com/lifeline-k8s/lifeline/test/e2e","Test":"TestA/sub","Elapsed":99}
{"Action":"pass","Package":"github.com/lifeline-k8s/lifeline/test/e2e","Test":"TestA","Elapsed":100}
{"Action":"fail","Package":"github.com/lifeline-k8s/lifeline/test/e2e","Test":"TestB","Elapsed":300}
{"Action":"fail","Package":"github.com/lifeline-k8s/lifeline/test/e2e","Elapsed":1200}
`)
	var b strings.Builder
	if err := report(&b, dir); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"test-main", "1500 s  FAILED", "total", "1512 s", "test/e2e", "1200 s  fail",
		"12 s  ok     CPU 100%", "FAILED CPU  50%", "CPU  50%\n", "built etcd in 1m2s"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "test/e2e TestB") > strings.Index(out, "test/e2e TestA") || strings.Contains(out, "TestA/sub") {
		t.Errorf("tests not slowest first, or a subtest listed:\n%s", out)
	}
}
