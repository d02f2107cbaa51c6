"""Text generation: how a decoding library turns the model's logits for the next token into
the distribution it samples from (`sampling`)."""
