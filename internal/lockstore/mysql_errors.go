package lockstore

import (
	"errors"
	"reflect"
)

// The driver's errors are read by reflection, without importing
// go-sql-driver/mysql, which would register its driver in every program;
// mysql_errors_test.go holds its type to this spelling.

const mysqlErrorPkg = "github.com/go-sql-driver/mysql"

// mysqlErr is what the plugin reads of a *mysql.MySQLError.
type mysqlErr struct {
	number   uint16
	sqlState string
	message  string
}

// mysqlErrorOf finds a *mysql.MySQLError in err's chain.
func mysqlErrorOf(err error) (mysqlErr, bool) {
	for err != nil {
		if v := reflect.ValueOf(err); v.Kind() == reflect.Pointer && !v.IsNil() {
			if e := v.Elem(); e.Kind() == reflect.Struct && e.Type().Name() == "MySQLError" && e.Type().PkgPath() == mysqlErrorPkg {
				return readMySQLError(e), true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if me, ok := mysqlErrorOf(inner); ok {
					return me, true
				}
			}
			return mysqlErr{}, false
		default:
			err = errors.Unwrap(err)
		}
	}
	return mysqlErr{}, false
}

// readMySQLError reads the fields of a mysql.MySQLError value.
func readMySQLError(e reflect.Value) mysqlErr {
	var me mysqlErr
	if f := e.FieldByName("Number"); f.IsValid() && f.CanUint() {
		me.number = uint16(f.Uint())
	}
	if f := e.FieldByName("SQLState"); f.IsValid() && f.Kind() == reflect.Array && f.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, f.Len())
		for i := range b {
			b[i] = byte(f.Index(i).Uint())
		}
		me.sqlState = string(b)
	}
	if f := e.FieldByName("Message"); f.IsValid() && f.Kind() == reflect.String {
		me.message = f.String()
	}
	return me
}

// mysqlCode is the MySQL error number in err, 0 when it carries none.
func mysqlCode(err error) uint16 {
	me, _ := mysqlErrorOf(err)
	return me.number
}
