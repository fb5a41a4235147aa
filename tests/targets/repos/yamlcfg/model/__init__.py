from .tts import TextToMel  # noqa: F401
