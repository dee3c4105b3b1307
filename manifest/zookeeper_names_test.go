package manifest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkconf/zkconf/internal/zktest"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

// TestValidateNameMatchesZooKeeper: for every character class, the name
// validator agrees with a real ZooKeeper server. A name it accepts is
// created; a name it refuses is refused by the server (or the client's own
// path check), so `--validate` never passes a set that then fails to
// publish with "invalid arguments".
func TestValidateNameMatchesZooKeeper(t *testing.T) {
	c := zktest.Start(t)
	conn, sess, err := zkclient.DialConn(zkclient.Config{Servers: c.Addrs(), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := sess.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/names", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		class string
		r     rune
		ok    bool
	}{
		{"ASCII letter", 'a', true},
		{"ASCII space", ' ', true},
		{"ASCII tilde", '~', true},
		{"C0 control U+0001", 0x01, false},
		{"C0 control U+001F", 0x1f, false},
		{"DEL U+007F", 0x7f, false},
		{"C1 control U+0080", 0x80, false},
		{"C1 control U+009F", 0x9f, false},
		{"Latin-1 U+00A0", 0xa0, true},
		{"Latin-1 U+00FC", 0xfc, true},
		{"CJK U+65E5", 0x65e5, true},
		{"Hangul U+D7FF", 0xd7ff, true},
		{"private use U+E000", 0xe000, false},
		{"private use U+F8FF", 0xf8ff, false},
		{"CJK compatibility U+F900", 0xf900, true},
		{"U+FFEF", 0xffef, true},
		{"specials U+FFF0", 0xfff0, false},
		{"replacement U+FFFD", 0xfffd, false},
		{"U+FFFF", 0xffff, false},
		{"supplementary U+10000", 0x10000, false},
		{"emoji U+1F600", 0x1f600, false},
		{"supplementary U+10FFFF", 0x10ffff, false},
	}
	for i, tc := range cases {
		name := fmt.Sprintf("n%d-%c-x", i, tc.r)
		verr := manifest.ValidateName(name)
		if (verr == nil) != tc.ok {
			t.Errorf("%s: ValidateName(%q) = %v, want ok=%v", tc.class, name, verr, tc.ok)
		}
		if verr != nil {
			want := fmt.Sprintf("character %d is %U", len([]rune(fmt.Sprintf("n%d-", i)))+1, tc.r)
			if !strings.Contains(verr.Error(), want) {
				t.Errorf("%s: error %q does not name the position and code point (%q)", tc.class, verr, want)
			}
		}
		_, zerr := conn.Create("/names/"+name, nil, 0, zk.WorldACL(zk.PermAll))
		switch {
		case tc.ok && zerr != nil:
			t.Errorf("%s: the validator accepts %q but ZooKeeper refuses it: %v", tc.class, name, zerr)
		case !tc.ok && zerr == nil:
			t.Errorf("%s: the validator refuses %q but ZooKeeper accepts it", tc.class, name)
		case !tc.ok && !errorsIsInvalid(zerr):
			t.Errorf("%s: ZooKeeper refused %q for another reason: %v", tc.class, name, zerr)
		}
	}
	// The "." and ".." components: refused by both.
	for _, name := range []string{".", ".."} {
		if manifest.ValidateName(name) == nil {
			t.Errorf("ValidateName(%q) accepted", name)
		}
		if _, err := conn.Create("/names/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
			t.Errorf("ZooKeeper accepted a node named %q", name)
		}
	}
}

// errorsIsInvalid: the server's "invalid arguments" or the client's own
// path check, the two ways a bad node name is refused.
func errorsIsInvalid(err error) bool {
	return errors.Is(err, zk.ErrBadArguments) || errors.Is(err, zk.ErrInvalidPath)
}
