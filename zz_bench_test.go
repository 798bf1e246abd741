package offlinelock_test

import (
	"testing"

	"github.com/offlinelock/offlinelock"
)

func BenchmarkZZUntagged(b *testing.B) {
	db, _ := setupModels(b, databases()[0], offlinelock.Config{})
	plain := openSQLite(b)
	plain.AutoMigrate(&Team{})
	admin(db).Create(&Team{ID: 1, Name: "x"})
	plain.Create(&Team{ID: 1, Name: "x"})
	// make accounts known as a locks-on-load table
	as(db, martin).Find(&[]Account{})
	b.Run("plugin", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var t Team
			as(db, martin).Where("name = ?", "x").First(&t)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var t Team
			plain.Where("name = ?", "x").First(&t)
		}
	})
}
