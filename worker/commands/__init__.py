"""The worker side's additions to the CLI: options on generated shape commands (`themes --refresh`,
`bridge --refresh`) and commands of their own (`extract-joins`). They import the read side's command
builder, so they live here, above the domain packages, never inside them."""
