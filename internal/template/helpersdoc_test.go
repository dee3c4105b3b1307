package template

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHelpersDocumented: every helper of zkconf's own (the sprig library
// aside, which both name as such) is named in docs/confagent.md's
// "Template helpers" section and in the helper list of the shipped example
// configuration, so that a new helper cannot be left out of either.
func TestHelpersDocumented(t *testing.T) {
	own := slices.Sorted(maps.Keys((&execState{}).funcs()))
	doc, err := os.ReadFile("../../docs/confagent.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## Template helpers\n")
	if start < 0 {
		t.Fatal(`docs/confagent.md has no "## Template helpers" section`)
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end > 0 {
		section = section[:end]
	}
	example, err := os.ReadFile("../../examples/agent/confagent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example's helper list: the comment lines from "Helpers" to the
	// first line that is not a comment.
	list := string(example)
	i := strings.Index(list, "# Helpers")
	if i < 0 {
		t.Fatal(`the example has no "# Helpers" list`)
	}
	list = list[i:]
	if j := regexp.MustCompile(`\n\s*[^#\s]`).FindStringIndex(list); j != nil {
		list = list[:j[0]]
	}
	for name, text := range map[string]string{"docs/confagent.md, Template helpers": section, "examples/agent/confagent.yaml, Helpers": list} {
		for _, h := range own {
			if !regexp.MustCompile(`(^|[^\w])` + regexp.QuoteMeta(h) + `([^\w]|$)`).MatchString(text) {
				t.Errorf("%s does not name the helper %q", name, h)
			}
		}
		if !strings.Contains(text, "sprig") {
			t.Errorf("%s does not say that sprig's library is there", name)
		}
	}
}
