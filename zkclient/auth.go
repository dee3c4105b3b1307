package zkclient

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// AuthEnv is the environment variable that may hold digest credentials
// ("user:password") for every zkconf binary. Credentials are never taken
// from a command-line argument, which any user can read in ps.
const AuthEnv = "ZKCONF_AUTH"

// LoadAuth returns digest credentials from file, or from $ZKCONF_AUTH when
// file is empty ("" when neither is set). The file must be a regular file
// readable by its owner only (no group or world bits), as sshd demands of
// private keys.
func LoadAuth(file string) (string, error) {
	if file == "" {
		v := strings.TrimSpace(os.Getenv(AuthEnv))
		if v == "" {
			return "", nil
		}
		if err := checkDigest(v); err != nil {
			return "", fmt.Errorf("$%s: %w", AuthEnv, err)
		}
		return v, nil
	}
	if err := CheckSecretFile(file); err != nil {
		return "", err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("credentials file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if err := checkDigest(v); err != nil {
		return "", fmt.Errorf("credentials file %s: %w", file, err)
	}
	return v, nil
}

// CheckSecretFile refuses a file that is missing, not regular, or readable
// by group or others.
func CheckSecretFile(name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("credentials file %s is not a regular file", name)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("credentials file %s is accessible by group or others (mode %04o): chmod 600 it", name, perm)
	}
	return nil
}

// checkDigest checks the "user:password" form without echoing it.
func checkDigest(v string) error {
	user, pass, ok := strings.Cut(v, ":")
	if !ok || user == "" || pass == "" {
		return errors.New(`credentials must be "user:password" on one line`)
	}
	if strings.ContainsAny(v, "\n\r") {
		return errors.New("credentials must be on one line")
	}
	return nil
}
