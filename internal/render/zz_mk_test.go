package render

import "os"

func mkdirs(p string) error { return os.MkdirAll(p, 0o755) }
