package core

const isDarwin = true
