package offlinelock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/offlinelock/offlinelock"
)

type sqlLog struct{ logger.Interface }

func (c *sqlLog) LogMode(logger.LogLevel) logger.Interface { return c }
func (c *sqlLog) Trace(_ context.Context, begin time.Time, f func() (string, int64), err error) {
	s, _ := f()
	fmt.Printf("%v %v | %.300s\n", time.Since(begin), err, s)
}

func TestZZProbe(t *testing.T) {
	d := databases()[1]
	db, p := setupModels(t, d, offlinelock.Config{})
	seedAccounts(t, db, 3)
	m := as(db, martin).Session(&gorm.Session{Logger: &sqlLog{logger.Discard}})
	var a Account
	fmt.Println("--- locked first")
	m.First(&a, 1)
	fmt.Println("--- held first")
	m.First(&a, 1)
	fmt.Println("--- save")
	m.Save(&a)
	fmt.Println("--- acquire doc")
	p.Acquire(m, &Doc{ID: 1}, "write")
	admin(db).Create(&Doc{ID: 1})
	fmt.Println("--- acquire doc 2,3")
	p.Acquire(m, &Doc{ID: 2}, "write")
	p.Acquire(m, &Doc{ID: 3}, "write")
	fmt.Println("--- release doc 3")
	p.Release(m, &Doc{ID: 3})
	fmt.Println("--- save doc")
	m.Save(&Doc{ID: 1, Title: "x"})
}
