package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zkconf/zkconf/agent"
	"github.com/zkconf/zkconf/internal/benchshape"
)

// BenchmarkTemplateApply applies generations of 20 items, every item
// changed, to one template target (confbench latency's template): the
// render, its staged file (streamed past render.StreamSpill), the fsync
// and the swap.
func BenchmarkTemplateApply(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("20x%dk", size>>10), func(b *testing.B) {
			spec := agent.TargetSpec{Name: "t", Kind: agent.KindTemplate, Template: benchshape.LatencyTemplate,
				Dest: join(b.TempDir(), "t.conf"), Mode: 0o640, UID: -1, GID: -1}
			r, err := agent.NewRenderer([]agent.TargetSpec{spec}, agent.ApplyAll, testLog(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := range b.N {
				items := map[string][]byte{}
				for j := range 20 {
					items[fmt.Sprintf("item-%02d", j)] = []byte(strings.Repeat(string(rune('a'+i%26)), size))
				}
				if out := r.Apply(context.Background(), snapOf(int64(i+1), items)); out.Err != nil {
					b.Fatal(out.Err)
				}
			}
		})
	}
}
