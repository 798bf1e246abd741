package lockstore

import "gorm.io/gorm"

// System is the OpenTelemetry db.system.name of dialector's database,
// spelt as go-gorm/opentelemetry spells it.
func System(dialector gorm.Dialector) string {
	switch dialector.Name() {
	case "postgres":
		return "postgresql"
	case "mysql":
		return "mysql"
	default:
		return "sqlite"
	}
}
