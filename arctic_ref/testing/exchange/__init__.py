"""The exchange component: a Ulysses exchange of yours, run on every rank inside the reference forward
over the layout matrix."""
