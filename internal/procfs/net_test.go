package procfs

import "testing"

func TestListensLoopback(t *testing.T) {
	const tcp = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   108        0 1 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0100007F:0050 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
   3: 0201A8C0:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
`
	const tcp6 = `  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A
   1: 00000000000000000000000001000000:0FA0 00000000000000000000000000000000:0000 0A
   2: 0000000000000000FFFF00000100007F:1388 00000000000000000000000000000000:0000 0A
`
	for port, want := range map[uint16]bool{
		5432: true,  // 127.0.0.1:5432
		8080: true,  // 0.0.0.0:8080
		80:   false, // an established connection, not a listener
		22:   false, // 192.168.1.2:22 only
		3000: true,  // [::]:3000, dual stack
		4000: false, // [::1]:4000: IPv6 loopback only
		5000: true,  // [::ffff:127.0.0.1]:5000
		9999: false,
	} {
		if got := ListensLoopback(tcp, tcp6, port); got != want {
			t.Errorf("port %d: %v, want %v", port, got, want)
		}
	}
}
