package dashboard

// ViewsComputed is how many root views s computed (see Server.baseView).
func ViewsComputed(s *Server) uint64 { return s.computed.Load() }
