package agent

import (
	"testing"

	"github.com/zkconf/zkconf/internal/fieldcheck"
)

// TestSpecInternalCopiesEveryField: TargetSpec.internal carries every field
// of a TargetSpec (and of its ConfdResource) to package targets' Spec, so
// that a field added to one and not copied fails here rather than render
// differently.
func TestSpecInternalCopiesEveryField(t *testing.T) {
	var s TargetSpec
	fieldcheck.Fill(t, &s)
	fieldcheck.Same(t, s, s.internal())
}
