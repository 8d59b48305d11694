// Package stack.
package stack

type Stack[T any] struct {
	items []T
}

func (s *Stack[T]) Push(v T) {
	s.items = append(s.items, v)
}

type (
	ID int
	Name = string
)

type Shape interface {
	Area() float64
}

func add(x, y int) int
