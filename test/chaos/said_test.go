package chaos

import (
	"strings"
	"testing"
)

func TestKubectlSaidKeepsTheCountsAndTheEnd(t *testing.T) {
	out := "node/n cordoned\nevicting pod ns/a\nevicting pod ns/b\nerror when evicting pods/\"a\" -n \"ns\" (will retry after 5s): no\n" +
		"pod/b evicted\npod/a evicted\nnode/n drained\n"
	got := kubectlSaid([]byte(out))
	for _, want := range []string{"7 lines (2 evictions asked, 1 refused and retried)", "pod/b evicted\npod/a evicted\nnode/n drained"} {
		if !strings.Contains(got, want) {
			t.Errorf("kubectlSaid = %q, want it to hold %q", got, want)
		}
	}
	if strings.Contains(got, "cordoned") {
		t.Errorf("kubectlSaid = %q kept a middle line", got)
	}
	if short := "node/n cordoned\nnode/n drained"; kubectlSaid([]byte(short)) != short {
		t.Errorf("a short output changed: %q", kubectlSaid([]byte(short)))
	}
}
