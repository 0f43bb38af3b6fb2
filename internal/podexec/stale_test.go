package podexec

import (
	"errors"
	"strings"
	"testing"
)

func TestStaleErrorNamesItsPod(t *testing.T) {
	if !strings.Contains((&StaleError{Pod: "web-a", Err: errors.New("test failed")}).Error(), "web-a") {
		t.Error("a stale error does not name its pod")
	}
}
