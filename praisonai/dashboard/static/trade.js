// The printed address's one visit: keep the page's key that the server handed over (in this
// origin's storage, which no other port of this host can read, unlike its cookie), then go on to
// the address without the token, leaving none in the tab's history.
const meta = (name) => document.querySelector(`meta[name="${name}"]`).content;
localStorage.setItem("praisonai-key", meta("praisonai-key"));
location.replace(meta("praisonai-next"));
