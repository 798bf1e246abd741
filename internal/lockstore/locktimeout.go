package lockstore

import "errors"

// IsLockTimeout says whether err is a lock wait that timed out or lost a
// deadlock (55P03, 40P01, 1205, 1213): a later try may succeed.
func IsLockTimeout(err error) bool {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		switch coded.SQLState() {
		case "55P03", "40P01":
			return true
		}
	}
	code := mysqlCode(err)
	return code == 1205 || code == 1213
}
