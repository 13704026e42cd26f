package fakeprovider

const (
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	hexLow = "0123456789abcdef"
)

// idGen is splitmix64: tiny, seedable and good enough to make ids look like
// the real ones while staying reproducible.
type idGen struct{ state uint64 }

func (g *idGen) u64() uint64 {
	g.state += 0x9E3779B97F4A7C15
	z := g.state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (g *idGen) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.u64()%uint64(len(alphabet))]
	}
	return string(b)
}

// Real id shapes: chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT,
// call_DdmO9pD3xa9XTPNJ32zg2hcA, msg_01XFDUDYJgAACzvnptvVoYEL,
// toolu_01T1x1fJ34qAmk2tNTrN7Up6, req_011CSHoEeqs5C35K2UUqR7Fy,
// resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b.
func (g *idGen) chatID() string       { return "chatcmpl-" + g.str(base62, 29) }
func (g *idGen) callID() string       { return "call_" + g.str(base62, 24) }
func (g *idGen) messageID() string    { return "msg_01" + g.str(base62, 22) }
func (g *idGen) toolUseID() string    { return "toolu_01" + g.str(base62, 22) }
func (g *idGen) anthropicReq() string { return "req_011C" + g.str(base62, 20) }
func (g *idGen) openaiReq() string    { return "req_" + g.str(hexLow, 32) }
func (g *idGen) responseID() string   { return "resp_" + g.str(hexLow, 48) }
func (g *idGen) respMsgID() string    { return "msg_" + g.str(hexLow, 48) }
func (g *idGen) funcCallID() string   { return "fc_" + g.str(hexLow, 48) }

// obfuscation imitates OpenAI's stream padding field: random characters of
// varying length.
func (g *idGen) obfuscation() string {
	return g.str(base62+"-_", 1+int(g.u64()%15))
}
