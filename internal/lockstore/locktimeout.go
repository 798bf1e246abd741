package lockstore

// IsLockTimeout says whether err is a lock wait that timed out or lost a
// deadlock (55P03, 40P01, 1205, 1213): a later try may succeed.
func IsLockTimeout(err error) bool {
	switch sqlState(err) {
	case "55P03", "40P01":
		return true
	}
	code := mysqlCode(err)
	return code == 1205 || code == 1213
}
