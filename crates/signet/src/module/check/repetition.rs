//! Replies that loop: a phrase repeated over and over.
