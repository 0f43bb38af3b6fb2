package lifecycle

import "testing"

func TestAddNotReadyReason(t *testing.T) {
	for _, tc := range []struct{ message, want string }{
		{"", `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		{`[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
		{`[{"userAgent":"Lifecycle","key":"preUpdateHook"},{"userAgent":"ContainerRecreateRequest","key":"x"}]`,
			`[{"userAgent":"ContainerRecreateRequest","key":"x"},{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`},
		{"not json", `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`},
	} {
		if got := AddNotReadyReason(tc.message, "Lifecycle", "preDeleteHook"); got != tc.want {
			t.Errorf("AddNotReadyReason(%q) = %s, want %s", tc.message, got, tc.want)
		}
	}
}

func TestRemoveNotReadyReason(t *testing.T) {
	msg, held, found := RemoveNotReadyReason(`[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`, "Lifecycle", "preUpdateHook")
	if msg != "[]" || held || !found {
		t.Errorf("last reason removed: %s %v %v", msg, held, found)
	}
	msg, held, found = RemoveNotReadyReason(`[{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]`, "Lifecycle", "preUpdateHook")
	if msg != `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]` || !held || !found {
		t.Errorf("one of two removed: %s %v %v", msg, held, found)
	}
	if _, _, found := RemoveNotReadyReason("", "Lifecycle", "preUpdateHook"); found {
		t.Error("found a reason in an empty message")
	}
}
