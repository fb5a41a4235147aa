"""The vocoder package."""
