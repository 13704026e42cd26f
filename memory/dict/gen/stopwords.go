package main

import "strings"

// stopwords returns the v1 stopword list: words too common in conversation
// to tell turns apart, dropped from retrieval rows and queries.
//
// The base is the Snowball English list (also PostgreSQL's english.stop),
// extended with the contractions that text.Normalize keeps whole ("i'm",
// "don't"), the single letters left over when an apostrophe is not between
// letters, and a few chat fillers.
func stopwords() []string {
	return strings.Fields(snowball + contractions + extra)
}

const snowball = `
i me my myself we our ours ourselves you your yours yourself yourselves he
him his himself she her hers herself it its itself they them their theirs
themselves what which who whom this that these those am is are was were be
been being have has had having do does did doing a an the and but if or
because as until while of at by for with about against between into through
during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few
more most other some such no nor not only own same so than too very s t can
will just don should now
`

const contractions = `
i'm i've i'll i'd you're you've you'll you'd he's he'll he'd she's she'll
she'd it's it'll it'd we're we've we'll we'd they're they've they'll they'd
that's that'll that'd there's there'll there'd here's what's what'll what'd
who's who'll who'd where's when's why's how's let's isn't aren't wasn't
weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't
shouldn't can't cannot couldn't mustn't mightn't needn't ain't y'all
d ll m re ve
`

const extra = `
would could also yeah oh hey hi wow yep nope ok okay um uh hmm lol haha gonna kinda
`
