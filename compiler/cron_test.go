package compiler

import (
	"strings"
	"testing"
)

func TestSchedulerExpression(t *testing.T) {
	tests := []struct {
		cron string
		want string
	}{
		{"*/15 * * * *", "cron(0,15,30,45 * * * ? *)"},
		{"0 9 * * mon-fri", "cron(0 9 ? * MON-FRI *)"},
		{"0 9 * * 1-5", "cron(0 9 ? * MON-FRI *)"},
		{"30 6 1 * *", "cron(30 6 1 * ? *)"},
		{"0 0 * * 0", "cron(0 0 ? * SUN *)"},
		{"0 0 * * 7", "cron(0 0 ? * SUN *)"},
		{"0 0 * * 5-7", "cron(0 0 ? * SUN,FRI,SAT *)"},
		{"0 0 * * */2", "cron(0 0 ? * SUN,TUE,THU,SAT *)"},
		{"5,10,11,12 1-3,8 * jan,mar-may *", "cron(5,10-12 1-3,8 * 1,3-5 ? *)"},
		{"0 */6 */10 * *", "cron(0 0,6,12,18 1,11,21,31 * ? *)"},
		{"0-1 0 * * *", "cron(0,1 0 * * ? *)"},
	}
	for _, tt := range tests {
		t.Run(tt.cron, func(t *testing.T) {
			if err := CheckCron(tt.cron); err != nil {
				t.Fatalf("the compiler rejects the case: %v", err)
			}
			got, err := SchedulerExpression(tt.cron)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("SchedulerExpression(%q) = %q, want %q", tt.cron, got, tt.want)
			}
		})
	}
}

func TestSchedulerExpressionErrors(t *testing.T) {
	tests := []struct {
		cron string
		want string
	}{
		{"0 9 1 * mon", "restricts both day of month and day of week"},
		{"0 9 */2 * 1-5", "restricts both"},
		{"* * * *", "has 4 fields, want 5"},
		{"60 * * * *", `minute field "60": 60 is outside 0-59`},
		{"5/2 * * * *", "a step needs * or a range"},
		{"* * * 13 *", "outside 1-12"},
		{"*/0 * * * *", "must be a positive number"},
		{"3-1 * * * *", "backwards"},
		{"1,,2 * * * *", "empty list item"},
		{"x * * * *", `"x" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.cron, func(t *testing.T) {
			_, err := SchedulerExpression(tt.cron)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SchedulerExpression(%q) error = %v, want it to mention %q", tt.cron, err, tt.want)
			}
		})
	}
}
