package web

import "net/http"

// opsRoutes are the memory-operations pages (DESIGN §8): dictionary
// rollouts, integrity reports and purges. Each has a rule in policies/.
func (c *Console) opsRoutes() []route {
	t := c.inTenant
	return []route{
		{http.MethodGet, "/console/dictionaries", t(c.dictionaries)},
		{http.MethodPost, dictUploadRoute, t(c.uploadDictionary)},
		{http.MethodPost, "/console/dictionaries/:version/derive", t(c.deriveDictionary)},
		{http.MethodGet, "/console/dictionaries/:version/progress", t(c.dictProgress)},
		{http.MethodGet, "/console/dictionaries/:version/flip", t(c.confirmFlip)},
		{http.MethodPost, "/console/dictionaries/:version/flip", t(c.flipDictionary)},
		{http.MethodGet, "/console/dictionaries/:version/retire", t(c.confirmRetire)},
		{http.MethodPost, "/console/dictionaries/:version/retire", t(c.retireDictionary)},
		{http.MethodGet, "/console/integrity", t(c.integrity)},
		{http.MethodPost, "/console/integrity", t(c.runIntegrity)},
		{http.MethodGet, "/console/integrity/:id", t(c.integrityReport)},
		{http.MethodPost, "/console/users/:id/purge", t(c.purgeUser)},
		{http.MethodPost, "/console/users/:id/rename", t(c.renameUser)},
		{http.MethodPost, "/console/conversations/:id/rename", t(c.renameConversation)},
	}
}
